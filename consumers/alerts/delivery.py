"""Sending a Delivery: a claimed job (consumers/jobs/claims.py), so two workers or a redelivered
task send it once. A failed attempt (whatever failed: the receiver, the network, the mail
server, the message) is logged and tried again with exponential backoff, until
ALERT_DELIVERY_GIVE_UP_SECONDS after the delivery was made; then it is failed.

Each retry is queued at its time (a Celery task with that eta, `retry`), so the attempts come
5, 10, 20 s ... apart as documented, without jitter. deliver_due, every 5 s, is only the safety
net for a retry whose task was lost: it queued every due retry itself before, and its
REQUEUE_AFTER then held the next one back for 60 s (attempts 11 s, then 63 s apart).

A resolution waits for its firing on the same channel to be sent (or given up on), so a
receiver never hears them out of order.

What the network cannot promise: a worker killed after the receiver took the POST and before
the row says "sent" sends it again when taken over. Receivers drop repeats by the delivery id
(X-Console-Delivery, and "delivery" in the body)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from ..jobs import claims
from . import channels
from .models import Delivery

log = logging.getLogger(__name__)
State = Delivery.State
# deliver_due does not queue a delivery again within this long of the time a task was queued for
# (its own queueing, or a retry's eta): a busy worker gets it once, a lost retry still goes
REQUEUE_AFTER = dt.timedelta(seconds=60)


def backoff(failed_attempts: int) -> dt.timedelta:
    base, cap = settings.ALERT_RETRY_BASE_SECONDS, settings.ALERT_RETRY_MAX_SECONDS
    return dt.timedelta(seconds=min(cap, base * 2 ** max(0, failed_attempts - 1)))


def due(now: dt.datetime | None = None):
    now = now or timezone.now()
    waiting = Delivery.objects.filter(state=State.PENDING, next_attempt_at__lte=now)
    return waiting.exclude(queued_at__gt=now - REQUEUE_AFTER)


def schedule(failed_attempts: int) -> list[float]:
    """Seconds between the attempts, after each of the first `failed_attempts` failures."""
    return [backoff(n).total_seconds() for n in range(1, failed_attempts + 1)]


def deliver(pk: int, retry: Callable[[int, dt.datetime], None] | None = None) -> str:
    """Send it once; after a failure it waits, and `retry(pk, at)` (when given) queues the next
    attempt for `at`."""
    claim = claims.claim(Delivery, pk, ready=[State.PENDING], running=State.SENDING)
    if claim is None:
        return "not runnable"
    delivery = Delivery.objects.select_related("alert__rule", "alert__cluster", "channel").get(pk=pk)
    now = timezone.now()
    if delivery.next_attempt_at > now and not claim.taken_over:  # queued early: back to waiting
        Delivery.objects.filter(pk=pk, run_token=claim.token).update(state=State.PENDING)
        return "not due"
    firing = _unsent_firing(delivery)
    if firing is not None:  # its firing is still being tried: after it, never before
        later = max(firing.next_attempt_at, now) + dt.timedelta(seconds=1)
        _wait(pk, claim, later, retry, attempts=delivery.attempts)
        return "after the firing"
    try:
        result, ok = channels.send(delivery), True
    except channels.SendError as exc:
        result, ok = str(exc), False
    except Exception as exc:  # a bug or an odd failure must not leave the row sending forever
        log.exception("delivery #%s to %s failed", pk, delivery.channel)
        result, ok = f"{type(exc).__name__}: {exc}", False
    now = timezone.now()
    attempts = [*delivery.attempts, {"at": now.isoformat(), "ok": ok, "result": result[:300]}]
    if ok:
        fields = {"state": State.SENT, "sent_at": now}
    elif now - delivery.created_at >= dt.timedelta(seconds=settings.ALERT_DELIVERY_GIVE_UP_SECONDS):
        fields = {"state": State.FAILED}
    else:
        failed = sum(1 for a in attempts if not a["ok"])
        return _wait(pk, claim, now + backoff(failed), retry, attempts=attempts)
    Delivery.objects.filter(pk=pk, run_token=claim.token).update(attempts=attempts, **fields)
    return fields["state"]


def _wait(pk: int, claim, at: dt.datetime, retry, *, attempts: list) -> str:
    """Back to pending until `at`, the next attempt queued for then. queued_at says a task is
    waiting for it (deliver_due leaves it until REQUEUE_AFTER past `at`); none: deliver_due
    queues it as soon as it is due."""
    Delivery.objects.filter(pk=pk, run_token=claim.token).update(
        state=State.PENDING, next_attempt_at=at, attempts=attempts, queued_at=at if retry else None
    )
    if retry:
        retry(pk, at)
    return State.PENDING


def _unsent_firing(delivery: Delivery) -> Delivery | None:
    if delivery.event != "resolved":
        return None
    return Delivery.objects.filter(alert_id=delivery.alert_id, channel_id=delivery.channel_id, event="firing",
                                   state__in=[State.PENDING, State.SENDING]).first()  # fmt: skip


def queue_due(enqueue) -> int:
    """Queue every delivery whose next attempt is due, marking it queued (see REQUEUE_AFTER)."""
    now = timezone.now()
    pks = list(due(now).values_list("pk", flat=True)[:1000])
    Delivery.objects.filter(pk__in=pks).update(queued_at=now)
    for pk in pks:
        enqueue(pk)
    return len(pks)
