"""Reads for the pages and the API: clusters from the database, state from Redis.

Each selector costs one database query (the clusters) and one or two Redis round trips,
whatever the number of groups. They also apply the one staleness rule (`freshness`): a value
older than its expected refresh is stale whatever the cause, and a stale group's health is
UNKNOWN with the reason, so pages and API say the same thing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..identity import Scope
from ..languages.evidence import register_formats
from ..models import Cluster
from . import charts, rebalance, rows, snapshots
from .config import history_store, stale_after
from .documents import ClusterMeta, GroupDocument, ProxyState
from .health import SEVERITY
from .rows import SORT_KEYS, GroupRow
from .rows import ordered as _ordered

# kept in English like the health evidence (consumers/live/health.py), shown translated
STALE_DATA = gettext_noop("stale data: %(reason)s")
register_formats(STALE_DATA)


@dataclass(frozen=True)
class Freshness:
    stale: bool
    reason: str | None
    age: float | None  # seconds; None when never read


def freshness(as_of: float | None, stale_reason: str | None, *, cluster: Cluster, meta, now: float) -> Freshness:
    """The staleness rule: stale when the poll said so, or when older than the expected refresh."""
    if as_of is None:
        return Freshness(True, stale_reason or _("never read"), None)
    age = now - as_of
    if stale_reason:
        return Freshness(True, stale_reason, age)
    if age > stale_after(cluster.poll_interval, meta.groups if meta else None):
        reason = _("not refreshed for %(age)s s (expected every %(interval)s s)") % {
            "age": f"{age:.0f}",
            "interval": cluster.poll_interval,
        }
        if meta is not None and meta.status == "failed" and meta.error:
            reason = _("%(reason)s; the last poll failed: %(error)s") % {"reason": reason, "error": meta.error}
        if meta is not None and meta.skipped:
            skipped = {"reason": reason, "seconds": f"{now - meta.skipped['since']:.0f}", "why": meta.skipped["why"]}
            reason = _("%(reason)s; polls skipped for %(seconds)s s: %(why)s") % skipped
        return Freshness(True, reason, age)
    return Freshness(False, None, age)


def unknown_health(reason: str) -> dict:
    evidence = STALE_DATA % {"reason": reason}
    return {"state": "UNKNOWN", "findings": [{"state": "UNKNOWN", "evidence": evidence}]}


AWAITING_POLL = "awaiting poll"


def last_seen_before_snapshot_lost(cluster: Cluster) -> dt.datetime | None:
    """When a poll last found one of the cluster's brokers, from the database: a cluster with
    brokers on record was polled before, so a missing snapshot means Redis lost it (restarted
    without persistence, flushed), not that the cluster was never polled."""
    return cluster.known_brokers.order_by("-last_seen").values_list("last_seen", flat=True).first()


def awaiting_poll_message(cluster: Cluster, last_seen: dt.datetime) -> str:
    return _(
        "Waiting for the first poll after Redis returned: Redis holds no snapshot of %(cluster)s (it restarted or "
        "lost its data). A poll last read the cluster at %(last_seen)s UTC; data is back within two polls (every "
        "%(interval)s s)."
    ) % {"cluster": cluster.name, "last_seen": f"{last_seen:%Y-%m-%d %H:%M:%S}", "interval": cluster.poll_interval}


def awaiting_poll(redis, cluster: Cluster) -> str | None:
    """Why the cluster has no data now, when Redis lost its snapshot (None: it has one, or
    never had one)."""
    if snapshots.read_meta(redis, cluster.pk) is not None:
        return None
    last_seen = last_seen_before_snapshot_lost(cluster)
    return awaiting_poll_message(cluster, last_seen) if last_seen else None


@dataclass
class ClusterState:
    cluster: Cluster
    meta: ClusterMeta | None
    now: float = field(default_factory=time.time)
    # how many of its groups a scoped user sees (None: they see them all, meta.groups says)
    visible_groups: int | None = None

    @property
    def scoped(self) -> bool:
        """Seen by a user whose grants do not cover everything: cluster-wide figures (the
        brokers' TPS, every team's topics together) are not shown to them."""
        return self.visible_groups is not None

    @property
    def groups(self) -> int | None:
        if self.visible_groups is not None:
            return self.visible_groups
        return self.meta.groups if self.meta else None

    @functools.cached_property
    def last_seen(self) -> dt.datetime | None:
        """Without a snapshot: when a poll last found the cluster's brokers (None: never)."""
        return None if self.meta else last_seen_before_snapshot_lost(self.cluster)

    @property
    def awaiting_message(self) -> str | None:
        return awaiting_poll_message(self.cluster, self.last_seen) if self.state == AWAITING_POLL else None

    @property
    def polled_age(self) -> float | None:
        return self.now - self.meta.polled_at if self.meta else None

    @property
    def data_age(self) -> float | None:
        success = self.meta.last_success_at if self.meta else None
        return self.now - success if success else None

    @property
    def state(self) -> str:
        if not self.meta:
            return AWAITING_POLL if self.last_seen else "never polled"
        if self.meta.status == "failed":
            return "failed"
        groups = self.meta.groups
        if self.data_age is not None and self.data_age > stale_after(self.cluster.poll_interval, groups):
            return "stale"
        return self.meta.status


def _row(cluster: Cluster, summary: dict, fresh: Freshness) -> GroupRow:
    if fresh.stale:
        summary = {**summary, "stale": True, "stale_reason": fresh.reason, "health": unknown_health(fresh.reason)}
    return GroupRow(cluster, summary, fresh.age, fresh.stale)


@dataclass
class GroupPage:
    rows: list[GroupRow]
    total: int
    page: int
    pages: int
    per_page: int
    next_cursor: dict | None = None  # where the next page starts (with `cursor=`): after this row


@dataclass
class Overview:
    states: list[ClusterState]
    top: list[GroupRow]
    health_counts: list[tuple[str, int]]
    total: int


def cluster_states(redis, clusters=None, scope: Scope | None = None) -> list[ClusterState]:
    """The clusters' states; with a `scope` that does not see everything, each counts only
    the groups it sees (a team is not told how many groups the others have)."""
    clusters = list(clusters if clusters is not None else Cluster.objects.all())
    metas = snapshots.read_metas(redis, [c.pk for c in clusters])
    now = time.time()
    states = [ClusterState(c, metas.get(c.pk), now) for c in clusters]
    if scope is not None and not scope.everything:
        counts = Counter(row.cluster.pk for row in group_rows(redis, clusters, metas, scope))
        for state in states:
            state.visible_groups = counts[state.cluster.pk]
            if state.meta is not None and state.meta.proxies:
                sees = scope.group_test(state.cluster.name)
                # a copy: the decoded meta is shared between requests
                state.meta = dataclasses.replace(
                    state.meta, proxies=[_scoped_proxy(p, sees) for p in state.meta.proxies]
                )
    return states


def _scoped_proxy(proxy: ProxyState, sees) -> ProxyState:
    """A proxy row as a scoped user sees it: only their groups with clients there counted."""
    if proxy.groups is None:
        return proxy
    names = [name for name in proxy.group_names if sees(name)]
    return dataclasses.replace(proxy, groups=len(names), group_names=names)


def group_rows(redis, clusters: list[Cluster], metas: dict | None = None, scope: Scope | None = None) -> list[GroupRow]:
    """Every group of `clusters` (that `scope` sees) as the list sorts and filters them: each
    row's summary is its index entry (snapshots.INDEX_FIELDS), until `with_summaries` reads the
    whole one for the rows that are shown (`metas`: the clusters' metas, if read). Shared rows
    (live/rows.py): read them, never change them."""
    return _scoped([row for kept in rows.current(redis, clusters, metas) for row in kept.rows], scope)


def _scoped(found: list[GroupRow], scope: Scope | None) -> list[GroupRow]:
    """The rows `scope` sees, in their order."""
    return found if scope is None or scope.everything else list(_scoped_lazily(found, scope))


def _scoped_lazily(found: list[GroupRow], scope: Scope | None):
    if scope is None or scope.everything:
        yield from found
        return
    tests = {}
    for row in found:
        sees = tests.get(row.cluster.pk)
        if sees is None:
            sees = tests[row.cluster.pk] = scope.group_test(row.cluster.name)
        if sees(row.summary["group"]):
            yield row


def with_summaries(redis, rows: list[GroupRow]) -> list[GroupRow]:
    """The rows with their whole summaries (one read per cluster), a stale one with why (see
    GroupRow). A group gone from the summaries since its entry was read (a poll in between)
    keeps its entry."""
    by_cluster: dict[int, list[str]] = {}
    for row in rows:
        by_cluster.setdefault(row.cluster.pk, []).append(row.summary["group"])
    found = {pk: snapshots.read_summaries(redis, pk, groups) for pk, groups in by_cluster.items()}
    whole, now = [], time.time()
    for row in rows:
        summary = found[row.cluster.pk].get(row.summary["group"], row.summary)
        as_of = row.summary.get("as_of")
        if row.stale and row.judged is not None:
            (meta,) = row.judged
            reason = row.summary.get("stale_reason")
            row = _row(row.cluster, summary, freshness(as_of, reason, cluster=row.cluster, meta=meta, now=now))
            whole.append(row)
        else:  # the age now: the rows are kept from one poll to the next (live/rows.py)
            whole.append(GroupRow(row.cluster, summary, None if as_of is None else now - as_of, row.stale))
    return whole


def overview(redis, clusters: list[Cluster], *, top: int = 10, scope: Scope | None = None) -> Overview:
    """The home page: cluster states, health counts and the groups most behind, in one read
    (of the groups `scope` sees)."""
    metas = snapshots.read_metas(redis, [c.pk for c in clusters])
    kept = rows.current(redis, clusters, metas)
    now = time.time()
    states = [ClusterState(c, metas.get(c.pk), now) for c in clusters]
    if scope is None or scope.everything:
        counts = sum((k.health_counts for k in kept), Counter())
        total = sum(len(k.rows) for k in kept)
    else:
        seen = _scoped([row for k in kept for row in k.rows], scope)
        counts, total = Counter(row.health for row in seen), len(seen)
        per_cluster = Counter(row.cluster.pk for row in seen)
        for state in states:
            state.visible_groups = per_cluster[state.cluster.pk]
    most_behind = _scoped_lazily(rows.in_order(kept, "lag", True), scope)
    return Overview(
        states=states,
        top=with_summaries(redis, list(itertools.islice(most_behind, top))),
        health_counts=[(state, counts[state]) for state in SEVERITY if counts[state]],
        total=total,
    )


def groups_with_dead_letters(redis, clusters: list[Cluster], scope: Scope | None = None) -> list[GroupRow]:
    """The groups (that `scope` sees) whose last poll saw dead letters, most first (filtered
    before ordering: a few among thousands)."""
    rows = [r for r in group_rows(redis, clusters, scope=scope) if r.summary.get("dlq_count")]
    return with_summaries(redis, _ordered(rows, "dlq", descending=True))


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
    cursor: dict | None = None,
    scope: Scope | None = None,
    idle_days: int | None = None,
) -> GroupPage:
    """One page of the filtered, sorted list: by number, or (`cursor`, for scripts) the rows
    after a given row's place in the order. A cursor is a row's sort value, group and cluster,
    not an index: rows that appear or go between two calls do not shift the next page, so a
    walk through the pages sees no row twice and skips none that kept its place."""
    clusters = [
        c for c in (Cluster.objects.all() if clusters is None else clusters) if not cluster or c.name == cluster
    ]
    needle, topic = query.strip().lower(), topic.strip()
    # the rows in order, kept (live/rows.py), then those that pass: a subset of a sorted list is sorted
    ordered = _scoped(rows.in_order(rows.current(redis, clusters), sort, descending), scope)
    if needle or topic or health:
        ordered = [
            r
            for r in ordered
            if (not needle or needle in r.summary["group"].lower())
            and (not topic or topic in (r.summary.get("topics") or []))
            and (not health or r.health == health)
        ]
    if idle_days is not None:
        ordered = _idle(redis, ordered, idle_days * 86400, time.time())
    pages = max(1, -(-len(ordered) // per_page))
    if cursor is not None:
        rest = [r for r in ordered if _comes_after(_place(r, sort), cursor, descending)]
        shown = rest[:per_page]
        following = _place(shown[-1], sort) if len(rest) > per_page else None
        return GroupPage(with_summaries(redis, shown), len(ordered), 0, pages, per_page, following)
    page = min(max(1, page), pages)
    shown = ordered[(page - 1) * per_page : page * per_page]
    following = _place(shown[-1], sort) if page < pages else None
    return GroupPage(with_summaries(redis, shown), len(ordered), page, pages, per_page, following)


def _idle(redis, rows: list[GroupRow], seconds: float, now: float) -> list[GroupRow]:
    """The rows of groups with no client online now and none seen for `seconds` (a group never
    seen online counts from when the console began watching its cluster; a cluster never polled,
    or a group whose online state is unknown, is not idle: nothing says so)."""
    seen = {c.pk: snapshots.last_online(redis, c.pk) for c in {r.cluster for r in rows}}
    kept = []
    for row in rows:
        last, since = seen[row.cluster.pk]
        name = row.summary["group"]
        start = last.get(name, since)
        if row.summary.get("online") is False and start is not None and now - start >= seconds:
            kept.append(row)
    return kept


def _place(row: GroupRow, sort: str) -> dict:
    """A row's place in the order: what a cursor carries."""
    return {"value": SORT_KEYS[sort](row), "group": row.summary["group"], "cluster": row.cluster.name}


def _comes_after(place: dict, cursor: dict, descending: bool) -> bool:
    """Whether a row at `place` comes after the cursor's row in the order `_ordered` makes."""
    if (place["value"] is None) != (cursor["value"] is None):
        return place["value"] is None  # unknown values come after every known one
    ties = (place["group"], place["cluster"]), (cursor["group"], cursor["cluster"])
    if place["value"] is None:
        return ties[0] > ties[1]
    mine, theirs = (place["value"], *ties[0]), (cursor["value"], *ties[1])
    return mine < theirs if descending else mine > theirs


@dataclass
class GroupView:
    doc: GroupDocument
    state: ClusterState
    age: float | None


def group_detail(redis, cluster: Cluster, group: str) -> GroupView | None:
    """One group's document as the page and the API show it, or None when it is not known."""
    doc = snapshots.read_detail(redis, cluster.pk, group)
    if doc is None:
        return None
    state = ClusterState(cluster, snapshots.read_meta(redis, cluster.pk))
    fresh = freshness(doc.as_of, doc.stale_reason, cluster=cluster, meta=state.meta, now=state.now)
    if fresh.stale:
        doc = dataclasses.replace(doc, stale=True, stale_reason=fresh.reason, health=unknown_health(fresh.reason))
    return GroupView(doc, state, fresh.age)


def allocation_timeline(cluster: Cluster, group: str, *, hours: int) -> rebalance.Timeline:
    """When the group's queues changed hands over the last `hours`, from the history."""
    since = dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours)
    store = history_store()
    rows = store.read("queue_offsets", cluster.name, group=group, since=since)
    polls = store.read("group_stats", cluster.name, group=group, since=since)
    incomplete = {ts for ts, complete in zip(polls.column("ts").to_pylist(), polls.column("complete").to_pylist(),
                                             strict=True) if complete is False}  # fmt: skip
    return rebalance.timeline(rows, incomplete=incomplete)


def allocation_chart(cluster: Cluster, group: str, *, hours: int) -> dict:
    return charts.allocation_figure(allocation_timeline(cluster, group, hours=hours), group=group, hours=hours)


def lag_chart(cluster: Cluster, group: str, *, hours: int) -> dict:
    """The group's lag over the last `hours`, from the history, as a plotly figure."""
    since = dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours)
    history = history_store().read("group_stats", cluster.name, group=group, since=since)
    return charts.lag_figure(history, group=group, hours=hours)
