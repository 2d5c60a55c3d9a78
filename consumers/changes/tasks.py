"""Celery tasks of the change workflow: thin wrappers over the services.

`execute_change` is acknowledged late, so a worker that dies mid-run has the task delivered
again; each kind's claim makes a second delivery harmless. A kind whose work is long (a DLQ
redrive) only claims the request here and queues its own task, with its own time limits."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from ..jobs import claims
from . import kinds, workflow
from .models import ChangeRequest

log = logging.getLogger(__name__)


@shared_task(
    ignore_result=True,
    acks_late=True,
    soft_time_limit=settings.CHANGE_RUN_TIME_LIMIT,
    time_limit=settings.CHANGE_RUN_TIME_LIMIT + 30,
)
def execute_change(request_id: int) -> str:
    request = ChangeRequest.objects.filter(pk=request_id).first()
    if request is None:
        return "nothing to do"
    outcome = kinds.of(request).execute(request_id)
    log.info("change request #%s (%s): %s", request_id, request.kind, outcome)
    return outcome


@shared_task(ignore_result=True)
def housekeeping() -> None:
    """Expire old pending requests, and queue again every job whose worker went silent (resets,
    redrives, statistics runs, report builds: consumers/jobs/claims.py), whose claim takes it over."""
    workflow.expire_due()
    claims.requeue_silent()
