"""Reads for the pages and the API: clusters from the database, state from Redis.

Each selector costs one database query (the clusters) and one or two Redis round trips,
whatever the number of groups.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from . import snapshots
from .health import SEVERITY
from .models import Cluster

STALE_AFTER_INTERVALS = 3  # data older than this many poll intervals is shown as stale

SORT_KEYS = {
    "lag": lambda r: r.summary.get("lag"),
    "lag_seconds": lambda r: r.summary.get("lag_seconds"),
    "tps": lambda r: r.summary.get("consume_tps"),
    "retry": lambda r: r.summary.get("retry_lag"),
    "dlq": lambda r: r.summary.get("dlq_count"),
    "health": lambda r: SEVERITY.index((r.summary.get("health") or {}).get("state", "UNKNOWN")),
    "age": lambda r: r.age,
    "group": lambda r: r.summary["group"].lower(),
    "cluster": lambda r: r.cluster.name,
}


@dataclass
class ClusterState:
    cluster: Cluster
    meta: dict | None
    now: float = field(default_factory=time.time)

    @property
    def polled_age(self) -> float | None:
        return self.now - self.meta["polled_at"] if self.meta else None

    @property
    def data_age(self) -> float | None:
        success = (self.meta or {}).get("last_success_at")
        return self.now - success if success else None

    @property
    def state(self) -> str:
        if not self.meta:
            return "never polled"
        if self.meta["status"] == "failed":
            return "failed"
        if self.data_age is not None and self.data_age > STALE_AFTER_INTERVALS * self.cluster.poll_interval:
            return "stale"
        return self.meta["status"]


@dataclass
class GroupRow:
    cluster: Cluster
    summary: dict
    now: float

    @property
    def age(self) -> float | None:
        as_of = self.summary.get("as_of")
        return self.now - as_of if as_of else None

    @property
    def stale(self) -> bool:
        age = self.age
        return (
            bool(self.summary.get("stale")) or age is None or age > STALE_AFTER_INTERVALS * self.cluster.poll_interval
        )

    @property
    def health(self) -> str:
        return (self.summary.get("health") or {}).get("state", "UNKNOWN")


@dataclass
class GroupPage:
    rows: list[GroupRow]
    total: int
    page: int
    pages: int
    per_page: int


def cluster_states(redis, clusters=None) -> list[ClusterState]:
    clusters = list(clusters if clusters is not None else Cluster.objects.all())
    metas = snapshots.read_metas(redis, [c.pk for c in clusters])
    now = time.time()
    return [ClusterState(c, metas.get(c.pk), now) for c in clusters]


def group_page(
    redis,
    *,
    clusters: list[Cluster] | None = None,
    query: str = "",
    cluster: str = "",
    health: str = "",
    topic: str = "",
    sort: str = "lag",
    descending: bool = True,
    page: int = 1,
    per_page: int = 100,
) -> GroupPage:
    clusters = [
        c for c in (Cluster.objects.all() if clusters is None else clusters) if not cluster or c.name == cluster
    ]
    summaries = snapshots.read_summaries(redis, [c.pk for c in clusters])
    now = time.time()
    needle, topic = query.strip().lower(), topic.strip()
    rows = [
        GroupRow(c, s, now)
        for c in clusters
        for s in summaries[c.pk]
        if (not needle or needle in s["group"].lower())
        and (not topic or topic in (s.get("topics") or []))
        and (not health or (s.get("health") or {}).get("state") == health)
    ]
    key = SORT_KEYS[sort]
    known = [r for r in rows if key(r) is not None]
    unknown = [r for r in rows if key(r) is None]  # unknown values go last whatever the direction
    known.sort(key=lambda r: (key(r), r.summary["group"]), reverse=descending)
    unknown.sort(key=lambda r: r.summary["group"])
    ordered = known + unknown
    pages = max(1, -(-len(ordered) // per_page))
    page = min(max(1, page), pages)
    return GroupPage(ordered[(page - 1) * per_page : page * per_page], len(ordered), page, pages, per_page)


def group_detail(redis, cluster: Cluster, group: str) -> tuple[dict | None, ClusterState]:
    detail = snapshots.read_detail(redis, cluster.pk, group)
    return detail, ClusterState(cluster, snapshots.read_meta(redis, cluster.pk))


def topics_of(redis, clusters: list[Cluster]) -> list[str]:
    summaries = snapshots.read_summaries(redis, [c.pk for c in clusters])
    return sorted({t for rows in summaries.values() for s in rows for t in s.get("topics") or []})
