"""Acting on an alert from the console: acknowledging it (audited). Silences: silences.py."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .. import audit
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
