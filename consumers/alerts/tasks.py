"""Celery tasks of alerts, thin wrappers over delivery and evaluate, and the receiver of each
published poll: what an evaluation notifies is queued here, once its rows are committed."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from ..jobs import claims
from . import channels, delivery, evaluate, services
from .models import Delivery


def on_poll(sender, **published) -> evaluate.Outcome:
    """The receiver of live.signals.poll_published."""
    return _queue(evaluate.on_poll(**published))


def _queue(outcome: evaluate.Outcome) -> evaluate.Outcome:
    pks, captures = list(outcome.notifications), list(outcome.captures)
    if pks:
        transaction.on_commit(lambda: [deliver.delay(pk) for pk in pks])
    if captures:
        transaction.on_commit(lambda: [capture_stacks.delay(pk) for pk in captures])
    return outcome


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def capture_stacks(alert_id: int) -> str:
    """The thread stacks of a fired alert's group (its rule asks for them)."""
    return services.capture_on_alert(alert_id)


@shared_task(ignore_result=True, acks_late=True, soft_time_limit=60, time_limit=90)
def deliver(delivery_id: int) -> str:
    return delivery.deliver(delivery_id, retry=_retry_at)


def _retry_at(delivery_id: int, at) -> None:
    """The next attempt, queued for its time (the backoff's, not beat's next tick)."""
    deliver.apply_async((delivery_id,), eta=at)


@shared_task(ignore_result=True)
def deliver_due() -> int:
    """Queue every delivery whose next attempt is due (retries after a failure)."""
    return delivery.queue_due(deliver.delay)


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def upkeep() -> None:
    """Every minute: end the alerts of clusters no longer polled, and post the firing alerts to
    every Alertmanager again, before they expire there."""
    _queue(evaluate.end_unpolled())
    channels.refresh_alertmanagers()


claims.register(Delivery, running=Delivery.State.SENDING, requeue=lambda pk: deliver.delay(pk))
