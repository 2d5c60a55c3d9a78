"""Acting on an alert from the console: acknowledging it (audited); capturing its group's thread
stacks when its rule asks for them. Silences: silences.py."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .. import audit
from ..clients import services as clients
from ..jobs.redis_client import get_redis
from ..rocketmq import RocketMQError
from .models import Alert


def acknowledge(pk: int, *, user, remote_addr: str) -> Alert | None:
    """Mark a firing alert as seen by `user`; None if it is not firing or already acknowledged."""
    with transaction.atomic():
        now = timezone.now()
        if not Alert.objects.filter(pk=pk, state=Alert.State.FIRING, acknowledged_at=None).update(
            acknowledged_by=user, acknowledged_at=now
        ):
            return None
        alert = Alert.objects.select_related("rule", "cluster").get(pk=pk)
        audit.record("alert-acknowledged", username=user.get_username(), remote_addr=remote_addr,
                     cluster=alert.cluster.name, group=alert.subject,
                     details={"alert": alert.pk, "rule": alert.rule.name, "evidence": alert.evidence})  # fmt: skip
    return alert


def capture_on_alert(alert_id: int) -> str:
    """Capture the group's stacks as its alert fires (the rule's capture_stacks), within the
    group's capture rate limit; kept and audited as any capture, by "alert <rule>"."""
    alert = Alert.objects.select_related("rule", "cluster").filter(pk=alert_id).first()
    if alert is None or not alert.rule.capture_stacks or alert.scope != "group":
        return "not asked"
    redis = get_redis()
    if not clients.capture_allowed(redis, alert.cluster, alert.subject):
        return "rate-limited"  # another capture of the group is less than 10 s old: it serves
    try:
        clients.capture_now(redis, alert.cluster, alert.subject, by=f"alert {alert.rule.name}",
                            details={"alert": alert.pk, "rule": alert.rule.name})  # fmt: skip
    except RocketMQError as exc:
        return f"the cluster could not be read: {exc}"
    return "captured"
