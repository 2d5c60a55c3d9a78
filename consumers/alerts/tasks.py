"""Celery tasks of alerts: thin wrappers over delivery."""

from __future__ import annotations

from celery import shared_task

from .. import claims
from . import channels, delivery, evaluate
from .models import Delivery


@shared_task(ignore_result=True, acks_late=True, soft_time_limit=60, time_limit=90)
def deliver(delivery_id: int) -> str:
    return delivery.deliver(delivery_id)


@shared_task(ignore_result=True)
def deliver_due() -> int:
    """Queue every delivery whose next attempt is due (retries after a failure)."""
    return delivery.queue_due(deliver.delay)


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def upkeep() -> None:
    """Every minute: end the alerts of clusters no longer polled, and post the firing alerts to
    every Alertmanager again, before they expire there."""
    evaluate.end_unpolled()
    channels.refresh_alertmanagers()


claims.register(Delivery, running=Delivery.State.SENDING, requeue=lambda pk: deliver.delay(pk))
