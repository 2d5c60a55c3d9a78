"""Celery tasks of the change workflow: thin wrappers over the services.

`execute_change` is acknowledged late, so a worker that dies mid-run has the task delivered
again; the service's claim makes a second delivery harmless (see resets/execute.py)."""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from . import notify, workflow
from .models import ChangeRequest, State

log = logging.getLogger(__name__)


@shared_task(
    ignore_result=True,
    acks_late=True,
    soft_time_limit=settings.CHANGE_RUN_TIME_LIMIT,
    time_limit=settings.CHANGE_RUN_TIME_LIMIT + 30,
)
def execute_change(request_id: int) -> str:
    from ..resets.execute import execute_reset

    request = ChangeRequest.objects.filter(pk=request_id).first()
    if request is None:
        return "nothing to do"
    if request.kind == ChangeRequest.Kind.REDRIVE:
        return _run_approved_redrive(request)
    ended = execute_reset(request_id)
    if ended is None:
        return "another worker has it"
    notify.decided(ended)
    log.info("change request #%s ended %s", ended.pk, ended.state)
    return ended.state


@shared_task(ignore_result=True)
def housekeeping() -> None:
    """Expire old pending requests, and hand runs whose worker died to a new worker."""
    workflow.expire_due()
    stale_before = timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS)
    for request_id in ChangeRequest.objects.filter(state=State.RUNNING, heartbeat_at__lt=stale_before).values_list(
        "pk", flat=True
    ):
        execute_change.delay(request_id)


def _run_approved_redrive(request: ChangeRequest) -> str:
    """An approved redrive request runs its job; the request ends as the job ends."""
    from ..dlq import redrive, runner
    from ..dlq.models import RedriveJob

    claimed = workflow.transition(request, {State.APPROVED}, State.RUNNING, actor=workflow.SYSTEM, action="run")
    if claimed is None:
        return "another worker has it"
    redrive.approved(claimed)
    job = runner.run_job(claimed.redrive_job.pk) or RedriveJob.objects.get(change_request=claimed)
    final = {RedriveJob.State.DONE: State.DONE, RedriveJob.State.FAILED: State.PARTIAL if job.moved else State.FAILED}
    if job.state in final:
        workflow.transition(
            claimed, {State.RUNNING}, final[job.state], actor=workflow.SYSTEM, action="result",
            details={"job": job.pk, "moved": job.moved, "failed": job.failed}, result={"job": job.pk},
            finished_at=timezone.now(),
        )  # fmt: skip
    return job.state
