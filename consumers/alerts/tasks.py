"""Celery tasks of alerts: thin wrappers over delivery."""

from __future__ import annotations

from celery import shared_task

from .. import claims
from . import delivery
from .models import Delivery


@shared_task(ignore_result=True, acks_late=True, soft_time_limit=60, time_limit=90)
def deliver(delivery_id: int) -> str:
    return delivery.deliver(delivery_id)


@shared_task(ignore_result=True)
def deliver_due() -> int:
    """Queue every delivery whose next attempt is due (retries after a failure)."""
    pks = list(delivery.due().values_list("pk", flat=True))
    for pk in pks:
        deliver.delay(pk)
    return len(pks)


claims.register(Delivery, running=Delivery.State.SENDING, requeue=lambda pk: deliver.delay(pk))
