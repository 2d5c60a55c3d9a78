"""Each poll's transitions of every rule that applies to the cluster.

- A condition that starts to hold opens an alert: pending, or firing at once when the rule has
  no for_seconds. A pending one fires once it has held for_seconds, and is cleared, never
  notified, if it stops before.
- A firing alert resolves when its condition is known not to hold (or its subject is gone),
  for the rule's keep_firing_seconds when it has one: a condition that comes back before then
  keeps the alert firing, with no new notification (Prometheus's keep_firing_for).
  Unknown (a failed poll, a stale group) changes nothing.
- Every transition is a conditional UPDATE on the state it leaves, and opening relies on the
  unique "one open alert per subject" constraint: a second worker evaluating the same poll,
  or a redelivered task, finds the work done and notifies nothing more.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field

import redis as redis_py
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from ..jobs.redis_client import get_redis
from ..live import snapshots
from ..models import Cluster
from . import conditions, silences
from .models import Alert, AlertRule, Channel, Delivery

log = logging.getLogger(__name__)
State = Alert.State


@dataclass
class Outcome:
    opened: int = 0
    fired: int = 0
    ended: int = 0
    notifications: list[int] = field(default_factory=list)  # deliveries created
    captures: list[int] = field(default_factory=list)  # alerts fired whose rule captures the group's stacks
    seconds: float = 0.0


def on_poll(*, cluster, meta, documents, window, polled_at, **_) -> Outcome:
    """What live.signals.poll_published carries, evaluated (tasks.on_poll receives it)."""
    return evaluate_cluster(cluster, meta, documents, window, now=dt.datetime.fromtimestamp(polled_at, dt.UTC))


def spec_of(rule: AlertRule) -> conditions.Spec:
    return conditions.Spec(rule.condition, frozenset(rule.states or ()), rule.threshold, rule.group_pattern or "*")


def rules_for(cluster: Cluster) -> list[AlertRule]:
    return list(
        AlertRule.objects.filter(enabled=True)
        .filter(Q(clusters=None) | Q(clusters=cluster))
        .distinct()
        .prefetch_related("channels")
    )


def evaluate_cluster(cluster: Cluster, meta, documents, window, *, now: dt.datetime | None = None) -> Outcome:
    started, now = time.monotonic(), now or timezone.now()
    outcome = Outcome()
    rules = rules_for(cluster)
    # a rule disabled, or narrowed away from this cluster, ends what it had open here
    orphans = Alert.objects.filter(cluster=cluster, state__in=Alert.OPEN).exclude(rule__in=rules)
    for alert in orphans.select_related("rule"):
        _end(alert, "the rule was disabled or no longer applies to this cluster", now, outcome)
    if not rules:
        outcome.seconds = time.monotonic() - started
        return outcome
    open_alerts = {
        (a.rule_id, a.subject): a
        for a in Alert.objects.filter(cluster=cluster, state__in=Alert.OPEN, rule__in=rules).select_related("rule")
    }
    idle = _idle(cluster, documents, now) if any(r.condition == AlertRule.Condition.ABANDONED for r in rules) else None
    for rule in rules:
        mine = {subject: a for (rule_id, subject), a in open_alerts.items() if rule_id == rule.pk}
        try:
            _evaluate_rule(rule, cluster, mine, meta, documents, window, now, outcome, idle)
        except Exception:  # one rule's trouble must not stop the others (nor the poll)
            log.exception("alert rule %r on %s", rule.name, cluster.name)
    outcome.seconds = time.monotonic() - started
    return outcome


def _idle(cluster: Cluster, documents, now: dt.datetime) -> dict[str, conditions.Idle]:
    """How long each offline group has had no client, from the polls' record (lifecycle/seen.py)."""
    try:
        last, since = snapshots.last_online(get_redis(), cluster.pk)
    except redis_py.RedisError:  # unknown: the rule's groups are judged unknown, never idle
        return {}
    if since is None or not documents:
        return {}
    at = now.timestamp()
    return {g: conditions.Idle(max(0.0, at - last.get(g, since)), g in last) for g, d in documents.items()
            if d.online is False}  # fmt: skip


def _evaluate_rule(rule, cluster, mine: dict, meta, documents, window, now, outcome: Outcome, idle=None) -> None:
    spec = spec_of(rule)
    verdict = conditions.judge(spec, meta, documents, window, idle)
    for subject, seen in verdict.holds.items():
        alert = mine.pop(subject, None)
        if alert is None:
            _open(rule, cluster, spec.scope, subject, seen, now, outcome)
        elif alert.state == State.PENDING and (now - alert.started_at).total_seconds() >= rule.for_seconds:
            _fire(alert, seen, now, outcome)
        elif alert.state == State.FIRING:
            if alert.clear_since is not None:
                Alert.objects.filter(pk=alert.pk, state=State.FIRING).update(clear_since=None)
            if alert.silenced_by_id:
                _unsilence_if_over(alert, now, outcome)
    if verdict.all_unknown:
        return
    for subject, alert in mine.items():
        if subject not in verdict.unknown and _clear_long_enough(alert, rule, now):
            _end(alert, conditions.clear_evidence(spec, subject, meta, documents), now, outcome)


def _clear_long_enough(alert: Alert, rule: AlertRule, now) -> bool:
    """Whether a known-clear condition ends `alert` now; a firing alert of a rule that keeps
    firing starts or goes on waiting instead."""
    if alert.state != State.FIRING or not rule.keep_firing_seconds:
        return True
    if alert.clear_since is None:
        Alert.objects.filter(pk=alert.pk, state=State.FIRING, clear_since=None).update(clear_since=now)
        return False
    return (now - alert.clear_since).total_seconds() >= rule.keep_firing_seconds


def end_unpolled(now: dt.datetime | None = None) -> Outcome:
    """Alerts of a cluster that is no longer polled (disabled) end: nothing will judge them."""
    outcome, now = Outcome(), now or timezone.now()
    for alert in Alert.objects.filter(state__in=Alert.OPEN, cluster__enabled=False).select_related("rule"):
        _end(alert, "the cluster is no longer polled (disabled)", now, outcome)
    return outcome


def _open(rule, cluster, scope, subject, seen, now, outcome: Outcome) -> None:
    try:
        with transaction.atomic():
            alert = Alert.objects.create(rule=rule, cluster=cluster, scope=scope, subject=subject,
                                         state=State.PENDING, evidence=seen.evidence,
                                         findings=list(seen.findings), started_at=now)  # fmt: skip
    except IntegrityError:  # another evaluation of this poll opened it first
        return
    outcome.opened += 1
    if rule.for_seconds == 0:
        _fire(alert, seen, now, outcome)


def _fire(alert: Alert, seen, now, outcome: Outcome) -> None:
    with transaction.atomic():
        if not Alert.objects.filter(pk=alert.pk, state=State.PENDING).update(
            state=State.FIRING, fired_at=now, evidence=seen.evidence, findings=list(seen.findings)
        ):
            return  # someone else fired it
        alert.state, alert.fired_at = State.FIRING, now
        outcome.fired += 1
        if alert.rule.capture_stacks and alert.scope == "group":  # evidence, silenced or not
            outcome.captures.append(alert.pk)
        silence = silences.matching(alert, now)
        if silence is not None:
            Alert.objects.filter(pk=alert.pk).update(silenced_by=silence)
            return
        _notify(alert, "firing", alert.rule.channels.all(), now, outcome)


def _unsilence_if_over(alert: Alert, now, outcome: Outcome) -> None:
    """The silence of a still-firing alert ended: notify the firing now, as if it began now."""
    if silences.matching(alert, now) is not None:
        return
    with transaction.atomic():
        if Alert.objects.filter(pk=alert.pk, state=State.FIRING, silenced_by=alert.silenced_by_id).update(
            silenced_by=None
        ):
            _notify(alert, "firing", alert.rule.channels.all(), now, outcome)


def _end(alert: Alert, evidence: str, now, outcome: Outcome) -> None:
    with transaction.atomic():
        ended = State.CLEARED if alert.state == State.PENDING else State.RESOLVED
        if not Alert.objects.filter(pk=alert.pk, state=alert.state).update(
            state=ended, ended_at=now, end_evidence=evidence
        ):
            return
        outcome.ended += 1
        if ended == State.RESOLVED:
            # the channels that heard it fire hear it end, even if silenced or taken off the
            # rule since: no receiver is left with an alert that never ends
            told = alert.deliveries.filter(event="firing").values_list("channel_id", flat=True)
            _notify(alert, "resolved", Channel.objects.filter(pk__in=told), now, outcome)


def _notify(alert: Alert, event: str, channels, now, outcome: Outcome) -> None:
    """Make the deliveries; the caller queues outcome.notifications (tasks.py), once committed."""
    for channel in channels:
        if not channel.enabled:
            continue
        delivery, created = Delivery.objects.get_or_create(
            alert=alert, channel=channel, event=event, defaults={"next_attempt_at": now}
        )
        if created:
            outcome.notifications.append(delivery.pk)
