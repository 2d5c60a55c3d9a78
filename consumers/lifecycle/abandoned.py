"""Abandoned groups: no client online for at least ABANDONED_AFTER_DAYS days, by what the
polls saw (seen.py), with what an operator needs to decide what to do with each: when a client
was last seen and a message last consumed, the lag and dead letters it still holds, the alert
rules that watch it, and the teams whose grants name it."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from ..alerts.models import AlertRule
from ..identity import Scope, teams_covering
from ..live import snapshots
from ..models import Cluster
from .seen import last_online

DAY = 86400.0


@dataclass
class AbandonedGroup:
    cluster: str
    group: str
    last_online: float | None  # None: not seen online since the console began watching
    watching_since: float
    last_consumed: float | None  # the newest store time of a message it consumed; None: unknown
    lag: int | None
    dlq_count: int | None
    rules: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)

    @property
    def idle_seconds(self) -> float:
        return self.last_online if self.last_online is not None else self.watching_since

    def to_wire(self) -> dict:
        return {"cluster": self.cluster, "group": self.group, "last_online": self.last_online,
                "watching_since": self.watching_since, "last_consumed": self.last_consumed, "lag": self.lag,
                "dlq_count": self.dlq_count, "alert_rules": self.rules, "teams": self.teams}  # fmt: skip


def abandoned_groups(redis, clusters: list[Cluster], scope: Scope, *, days: float, now: float) -> list[AbandonedGroup]:
    """The groups of these clusters the scope sees with no client online for `days`, the longest
    abandoned first. A group whose online state is unknown now is not listed (it may be online)."""
    rules = list(AlertRule.objects.filter(enabled=True).prefetch_related("clusters"))
    found = []
    for cluster in clusters:
        seen, since = last_online(redis, cluster.pk)
        if since is None:
            continue  # never polled: nothing is known
        for name, doc in snapshots.read_details(redis, cluster.pk).items():
            if doc.online is not False or not scope.sees_group(cluster.name, name):
                continue
            last = seen.get(name)
            if now - (last if last is not None else since) < days * DAY:
                continue
            consumed = [q.last_consume_ms for q in doc.queues if q.last_consume_ms]
            found.append(AbandonedGroup(
                cluster=cluster.name, group=name, last_online=last, watching_since=since,
                last_consumed=max(consumed) / 1000 if consumed else None, lag=doc.lag, dlq_count=doc.dlq_count,
                rules=[r.name for r in rules if _watches(r, cluster, name)], teams=teams_covering(cluster.name, name),
            ))  # fmt: skip
    found.sort(key=lambda g: (g.idle_seconds, g.cluster, g.group))
    return found


def watching_rules(cluster: Cluster, group: str) -> list[str]:
    """The enabled alert rules that watch the group (what stops when it goes)."""
    rules = AlertRule.objects.filter(enabled=True).prefetch_related("clusters").order_by("name")
    return [r.name for r in rules if _watches(r, cluster, group)]


def _watches(rule: AlertRule, cluster: Cluster, group: str) -> bool:
    named = list(rule.clusters.all())
    if named and cluster not in named:
        return False
    return rule.condition in AlertRule.GROUP_CONDITIONS and fnmatch.fnmatchcase(group, rule.group_pattern or "*")
