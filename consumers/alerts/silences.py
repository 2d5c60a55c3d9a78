"""Silences: who silenced what, until when and why; every change audited."""

from __future__ import annotations

import datetime as dt
import fnmatch

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .. import audit
from .models import Alert, AlertRule, Silence


def active(now: dt.datetime | None = None):
    now = now or timezone.now()
    return Silence.objects.filter(starts_at__lte=now, ends_at__gt=now, ended_by=None)


def matching(alert: Alert, now: dt.datetime) -> Silence | None:
    candidates = active(now).filter(Q(rule=None) | Q(rule=alert.rule_id), Q(cluster=None) | Q(cluster=alert.cluster_id))
    return next((s for s in candidates if fnmatch.fnmatchcase(alert.subject, s.subject_pattern or "*")), None)


def create(*, user, remote_addr: str, rule: AlertRule | None, cluster, subject_pattern: str, minutes: int,
           reason: str) -> Silence:  # fmt: skip
    now = timezone.now()
    with transaction.atomic():
        silence = Silence.objects.create(rule=rule, cluster=cluster, subject_pattern=subject_pattern or "*",
                                         starts_at=now, ends_at=now + dt.timedelta(minutes=minutes),
                                         reason=reason, created_by=user)  # fmt: skip
        audit.record("silence-created", username=user.get_username(), remote_addr=remote_addr,
                     cluster=cluster.name if cluster else "", group=subject_pattern,
                     details=describe(silence))  # fmt: skip
    return silence


def end(pk: int, *, user, remote_addr: str) -> Silence | None:
    now = timezone.now()
    with transaction.atomic():
        if not Silence.objects.filter(pk=pk, ended_by=None, ends_at__gt=now).update(ended_by=user, ends_at=now):
            return None
        silence = Silence.objects.get(pk=pk)
        audit.record("silence-ended", username=user.get_username(), remote_addr=remote_addr,
                     cluster=silence.cluster.name if silence.cluster else "", group=silence.subject_pattern,
                     details=describe(silence))  # fmt: skip
    return silence


def describe(silence: Silence) -> dict:
    return {
        "silence": silence.pk,
        "rule": silence.rule.name if silence.rule else "every rule",
        "cluster": silence.cluster.name if silence.cluster else "every cluster",
        "subjects": silence.subject_pattern,
        "until": silence.ends_at.isoformat(),
        "reason": silence.reason,
    }
