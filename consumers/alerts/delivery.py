"""Sending a Delivery: a claimed job (consumers/claims.py), so two workers or a redelivered
task send it once. A failed attempt is logged and tried again with exponential backoff, until
ALERT_DELIVERY_GIVE_UP_SECONDS after the delivery was made; then it is failed.

What the network cannot promise: a worker killed after the receiver took the POST and before
the row says "sent" sends it again when taken over. Receivers drop repeats by the delivery id
(X-Console-Delivery, and "delivery" in the body)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone

from .. import claims
from . import channels
from .models import Delivery

State = Delivery.State


def backoff(failed_attempts: int) -> dt.timedelta:
    base, cap = settings.ALERT_RETRY_BASE_SECONDS, settings.ALERT_RETRY_MAX_SECONDS
    return dt.timedelta(seconds=min(cap, base * 2 ** max(0, failed_attempts - 1)))


def due(now: dt.datetime | None = None):
    return Delivery.objects.filter(state=State.PENDING, next_attempt_at__lte=now or timezone.now())


def deliver(pk: int) -> str:
    claim = claims.claim(Delivery, pk, ready=[State.PENDING], running=State.SENDING)
    if claim is None:
        return "not runnable"
    delivery = Delivery.objects.select_related("alert__rule", "alert__cluster", "channel").get(pk=pk)
    now = timezone.now()
    if delivery.next_attempt_at > now and not claim.taken_over:  # queued early: back to waiting
        Delivery.objects.filter(pk=pk, run_token=claim.token).update(state=State.PENDING)
        return "not due"
    try:
        result, ok = channels.send(delivery), True
    except channels.SendError as exc:
        result, ok = str(exc), False
    now = timezone.now()
    attempts = [*delivery.attempts, {"at": now.isoformat(), "ok": ok, "result": result[:500]}]
    if ok:
        fields = {"state": State.SENT, "sent_at": now}
    elif now - delivery.created_at >= dt.timedelta(seconds=settings.ALERT_DELIVERY_GIVE_UP_SECONDS):
        fields = {"state": State.FAILED}
    else:
        failed = sum(1 for a in attempts if not a["ok"])
        fields = {"state": State.PENDING, "next_attempt_at": now + backoff(failed)}
    Delivery.objects.filter(pk=pk, run_token=claim.token).update(attempts=attempts, **fields)
    return fields["state"]
