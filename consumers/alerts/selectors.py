"""What the Alerts page and API read."""

from __future__ import annotations

from django.db.models import Prefetch, Q
from django.utils import timezone

from .models import Alert, Delivery, Silence
from .silences import active

HISTORY = 100
OPEN_SHOWN = 500  # a storm of alerts still renders (the API lists 500 of a state too)


def alerts():
    return Alert.objects.select_related("rule", "cluster", "silenced_by", "acknowledged_by").prefetch_related(
        Prefetch("deliveries", queryset=Delivery.objects.select_related("channel").order_by("created_at"))
    )


def visible(groups: Q | None, clusters: Q | None) -> Q | None:
    """The alerts a scoped user sees (`groups`, `clusters`: identity's filters by group and by
    cluster; None: all): a group's alerts within their groups, a broker's on their clusters.
    A cluster-wide alert names groups of every team: only for those who see everything."""
    if groups is None:
        return None
    brokers = Q(scope="broker") if clusters is None else Q(scope="broker") & clusters
    return (Q(scope="group") & groups) | brokers


def visible_to(user) -> Q | None:
    """The filter of the alerts `user` sees (None: all of them)."""
    from ..identity import within

    return visible(within(user, group="subject"), within(user, group=None))


def _only(found, within: Q | None):
    return found if within is None else found.filter(within)


def board(alerts_within: Q | None = None, silences_within: Q | None = None) -> dict:
    """Firing (notified, then silenced), pending and the latest ended alerts; silences (of the
    user's scope: `visible`, and the silences of clusters they see)."""
    mine = _only(alerts(), alerts_within)
    firing = list(mine.filter(state=Alert.State.FIRING).order_by("-fired_at")[:OPEN_SHOWN])
    return {
        "firing": [a for a in firing if a.silenced_by_id is None],
        "silenced": [a for a in firing if a.silenced_by_id is not None],
        "pending": list(mine.filter(state=Alert.State.PENDING).order_by("-started_at")[:OPEN_SHOWN]),
        "history": list(mine.exclude(state__in=Alert.OPEN).order_by("-ended_at")[:HISTORY]),
        "silences": list(_only(active(), silences_within).select_related("rule", "cluster", "created_by")),
        "ended_silences": list(
            _only(Silence.objects, silences_within)
            .exclude(pk__in=active().values("pk"))
            .select_related("rule", "cluster", "created_by", "ended_by")
            .order_by("-ends_at")[:20]
        ),
        "now": timezone.now(),
    }


def firing_count(within: Q | None = None) -> int:
    return _only(Alert.objects.filter(state=Alert.State.FIRING, silenced_by=None), within).count()


def firing_for(cluster_name: str, group: str) -> list[Alert]:
    return list(alerts().filter(state=Alert.State.FIRING, cluster__name=cluster_name, scope="group", subject=group))


def to_wire(alert: Alert) -> dict:
    return {
        "id": alert.pk,
        "rule": alert.rule.name,
        "severity": alert.rule.severity,
        "cluster": alert.cluster.name,
        "scope": alert.scope,
        "subject": alert.subject,
        "state": alert.state,
        "silenced": alert.silenced_by_id is not None,
        "evidence": alert.evidence,
        "findings": alert.findings,
        "started_at": alert.started_at,
        "fired_at": alert.fired_at,
        "ended_at": alert.ended_at,
        "end_evidence": alert.end_evidence or None,
        "acknowledged_by": alert.acknowledged_by.get_username() if alert.acknowledged_by else None,
        "acknowledged_at": alert.acknowledged_at,
        "deliveries": [
            {
                "channel": d.channel.name,
                "event": d.event,
                "state": d.state,
                "attempts": d.attempts,
                "sent_at": d.sent_at,
                "next_attempt_at": d.next_attempt_at if d.state == "pending" else None,
            }
            for d in alert.deliveries.all()
        ],  # fmt: skip
    }
