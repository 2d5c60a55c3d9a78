"""The groups list's rows, kept by each web process from one poll to the next.

Every open groups list asks again every 5 s, and the overview and /metrics read every group too,
while a cluster's index changes once a poll. At 50,000 groups, making the index's rows (55 ms) and
sorting them (70 ms) on each request, and decoding a new index (130 ms) on the first request after
a poll, took the list past its 150 ms. So each process keeps:

- per cluster, the rows of the index it decoded last (`current`), with their staleness judged,
  which holds until the first fresh row would turn stale (`valid_until`): then they are made again;
- per order asked for (clusters, sort, direction), every row of those clusters in that order
  (`in_order`). A filtered or scoped list takes the order's rows that pass, in order (a subset of a
  sorted list is sorted): no request sorts.

A thread of each web process (`keep_warm`, started by gunicorn's worker hook) makes again, as soon
as a poll has landed, what the process was asked for: the first request after a poll finds it made.
Rows are shared between requests and threads: read them, never change them.
"""

from __future__ import annotations

import functools
import heapq
import logging
import math
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass

from ..models import Cluster
from . import snapshots
from .config import stale_after
from .forecast import sort_value as drain_sort_value
from .health import SEVERITY

log = logging.getLogger(__name__)


@dataclass
class GroupRow:
    """A group's summary as the list shows it: staleness and health already judged by age.

    A stale row of `current` keeps its index entry as it is and `judged` (the cluster's meta):
    `selectors.with_summaries` writes the reason into the rows it shows. Judging every row's
    reason was most of a 10,000-group list's time once its data had aged."""

    cluster: Cluster
    summary: dict
    age: float | None
    stale: bool
    judged: tuple | None = None

    @property
    def health(self) -> str:
        if self.stale:
            return "UNKNOWN"
        return (self.summary.get("health") or {}).get("state", "UNKNOWN")


SORT_KEYS = {
    "lag": lambda r: r.summary.get("lag"),
    "lag_seconds": lambda r: r.summary.get("lag_seconds"),
    "tps": lambda r: r.summary.get("consume_tps"),
    "retry": lambda r: r.summary.get("retry_lag"),
    "dlq": lambda r: r.summary.get("dlq_count"),
    "drain": lambda r: drain_sort_value(r.summary.get("drain")),
    "health": lambda r: SEVERITY.index(r.health),
    # the oldest first when ascending, as the age would order them (an age is now - as_of, and
    # the kept orders outlive the moment their rows' ages were taken)
    "age": lambda r: None if r.summary.get("as_of") is None else -r.summary["as_of"],
    "group": lambda r: r.summary["group"].lower(),
    "cluster": lambda r: r.cluster.name,
}


def ordered(rows: list[GroupRow], sort: str, *, descending: bool, first: int | None = None) -> list[GroupRow]:
    """The rows in the list's order; with `first`, only that many from the top (without
    sorting all of them)."""
    key = SORT_KEYS[sort]
    keyed = [(key(r), r.summary["group"], r.cluster.name, r) for r in rows]  # each key computed once
    known = [k for k in keyed if k[0] is not None]
    unknown = [k for k in keyed if k[0] is None]  # unknown values go last whatever the direction
    if first is not None:
        pick = heapq.nlargest if descending else heapq.nsmallest
        known = pick(first, known, key=lambda k: k[:3])  # (value, group, cluster) is unique: no ties
        unknown = heapq.nsmallest(max(0, first - len(known)), unknown, key=lambda k: k[1:3])
        return [k[3] for k in known] + [k[3] for k in unknown]
    known.sort(key=lambda k: k[:3], reverse=descending)
    unknown.sort(key=lambda k: k[1:3])
    return [k[3] for k in known] + [k[3] for k in unknown]


@dataclass
class ClusterRows:
    cluster: Cluster
    entries: list[dict]  # the index entries they were made from (snapshots.read_index's object)
    token: tuple  # what else they depend on: the cluster's settings and its meta
    rows: list[GroupRow]
    valid_until: float  # when the first fresh row turns stale

    @functools.cached_property
    def health_counts(self) -> Counter:
        return Counter(row.health for row in self.rows)


_lock = threading.Lock()  # the dictionaries below
_making = threading.RLock()  # making rows or an order: one thread at a time, the others wait and take it
_kept: dict[int, ClusterRows] = {}
# (pks, sort, descending) -> (the ClusterRows they were made from, held: compared by identity; rows)
_orders: dict[tuple, tuple[tuple, list[GroupRow]]] = {}
_asked: dict[int, Cluster] = {}  # the clusters this process was asked for: what the warming thread keeps


def current(redis, clusters: list[Cluster], metas: dict | None = None, *, latest: bool = False) -> list[ClusterRows]:
    """Each cluster's rows as of now (`metas`: the clusters' metas, if read). While this process's
    warming thread runs, a cluster whose index a poll has just replaced keeps the rows of the
    poll before (their data no older than their staleness allows), the thread is woken to make
    the new ones, and the request does not wait for them; `latest`: always the newest poll's."""
    ids = [c.pk for c in clusters]
    if latest or not warming():
        entries, behind = snapshots.read_index(redis, ids), set()
    else:
        entries, behind = snapshots.read_index_or_kept(redis, ids)
        if behind:
            _wake.set()
    metas = snapshots.read_metas(redis, ids) if metas is None else metas
    now = time.time()
    found = []
    for cluster in clusters:
        meta, mine = metas.get(cluster.pk), entries[cluster.pk]
        token = _token(cluster, meta)
        with _lock:
            kept = _kept.get(cluster.pk)
            _asked[cluster.pk] = cluster
        # a cluster behind keeps the poll before's rows whatever the new meta says
        if not _holds(kept, mine, None if cluster.pk in behind else token, now):
            with _making:  # one making at a time: a second one waits for it and finds it made
                kept = _kept.get(cluster.pk)
                if not _holds(kept, mine, token, now):
                    kept = _made(cluster, mine, meta, token, now)
                    with _lock:
                        _kept[cluster.pk] = kept
        found.append(kept)
    return found


def _holds(kept: ClusterRows | None, entries: list[dict], token: tuple | None, now: float) -> bool:
    """Whether `kept` are the rows of these entries (and of `token`, unless None), not yet stale."""
    return (
        kept is not None
        and kept.entries is entries
        and (token is None or kept.token == token)
        and now < kept.valid_until
    )


def in_order(kept: list[ClusterRows], sort: str, descending: bool) -> list[GroupRow]:
    """Every row of `kept` in the list's order, sorted once for these rows."""
    key = (tuple(k.cluster.pk for k in kept), sort, descending)
    found = _orders.get(key)
    if found is None or not _made_from(found[0], kept):
        with _making:
            found = _orders.get(key)
            if found is None or not _made_from(found[0], kept):
                found = (tuple(kept), ordered([row for k in kept for row in k.rows], sort, descending=descending))
                with _lock:
                    _orders[key] = found
    return found[1]


def _made_from(held: tuple, kept: list[ClusterRows]) -> bool:
    return len(held) == len(kept) and all(a is b for a, b in zip(held, kept, strict=True))


def forget() -> None:
    """Keep nothing (tests: a database rolled back gives the next test's clusters the same ids)."""
    with _lock:
        _kept.clear()
        _orders.clear()
        _asked.clear()


def _token(cluster: Cluster, meta) -> tuple:
    if meta is None:
        return (cluster.name, cluster.poll_interval, None)
    return (cluster.name, cluster.poll_interval, meta.polled_at, meta.status, meta.groups, meta.error, meta.skipped)


def _made(cluster: Cluster, entries: list[dict], meta, token: tuple, now: float) -> ClusterRows:
    limit = stale_after(cluster.poll_interval, meta.groups if meta else None)
    rows, turns_stale = [], math.inf
    for entry in entries:
        as_of, reason = entry.get("as_of"), entry.get("stale_reason")
        age = None if as_of is None else now - as_of
        # stale as selectors.freshness would say (reason, never read, or too old)
        stale = as_of is None or bool(reason) or age > limit
        if not stale:
            turns_stale = min(turns_stale, as_of + limit)
        rows.append(GroupRow(cluster, entry, age, stale, (meta,) if stale else None))
    return ClusterRows(cluster, entries, token, rows, turns_stale)


# --- the warming thread -------------------------------------------------------------------------

_warming_pid: int | None = None
_warming_thread: threading.Thread | None = None
_wake = threading.Event()


def warming() -> bool:
    """Whether this process's warming thread runs."""
    return _warming_pid == os.getpid() and _warming_thread is not None and _warming_thread.is_alive()


def keep_warm(interval: float, redis_factory) -> threading.Thread | None:
    """Start this process's warming thread (once per process; `interval` 0: never): every
    `interval` seconds, or at once when a request finds a poll newer than its rows, it makes
    again the rows and orders this process was asked for that a poll has changed."""
    global _warming_pid, _warming_thread
    if interval <= 0 or _warming_pid == os.getpid():
        return None
    _warming_pid = os.getpid()
    _warming_thread = threading.Thread(
        target=_warm_forever, args=(interval, redis_factory), name="rows-warming", daemon=True
    )
    _warming_thread.start()
    return _warming_thread


def warm(redis) -> int:
    """Make again what a poll changed of what was asked for; returns how many orders were made."""
    with _lock:
        clusters = list(_asked.values())
        orders = list(_orders)
    if not clusters:
        return 0
    by_pk = {k.cluster.pk: k for k in current(redis, clusters, latest=True)}
    made = 0
    for pks, sort, descending in orders:
        if all(pk in by_pk for pk in pks):
            kept = [by_pk[pk] for pk in pks]
            found = _orders.get((pks, sort, descending))
            if found is None or not _made_from(found[0], kept):
                in_order(kept, sort, descending)
                made += 1
    return made


def _warm_forever(interval: float, redis_factory) -> None:
    while True:
        _wake.wait(interval)
        _wake.clear()
        try:
            warm(redis_factory())
        except Exception:  # Redis away, a cluster deleted: the requests will say so; try again
            log.debug("warming the groups list's rows", exc_info=True)
