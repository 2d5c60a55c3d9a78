"""Turn what one poll read into what the console shows: a typed document per group with its
health, the cluster's meta document, both written to Redis in one transaction, and the
history rows appended to Parquet.

`publish_poll` is the one production path from a reading to the pages: the poll calls it,
and so do the tests and benchmarks that publish synthetic readings.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings

from ..models import Cluster
from ..rocketmq import ClusterSnapshot
from . import building, documents, snapshots
from . import window as windows
from .brokers import BrokerReport
from .config import history_spool
from .documents import BrokerState, ClusterMeta, GroupDocument
from .forecast import forecast
from .health import Finding, Sample, Thresholds, evaluate
from .history import HistoryStore, history_tables
from .notes import METRICS_NOT_ENABLED
from .retention import RetentionFacts
from .retention import judge as judge_retention
from .signals import announce
from .spool import HistorySpool, own_backlog, record_backlog, write_history
from .stages import Stages
from .staging import Staged
from .taglag import TagLags

log = logging.getLogger(__name__)


@dataclass
class PollReading:
    """What one poll read from the cluster's name servers and brokers."""

    snapshot: ClusterSnapshot
    polled_at: float
    lag_times: dict = field(default_factory=dict)
    tag_lags: TagLags | None = None
    retention: RetentionFacts | None = None
    dlq_counts: dict[str, int | None] = field(default_factory=dict)
    # POP messages in flight per group from the brokers' metrics; None: not read (why: the note)
    in_flight: dict[str, int] | None = None
    in_flight_note: str | None = METRICS_NOT_ENABLED
    stages: Stages = field(default_factory=Stages)
    # the proxies' states as the read judged them (restart times against the previous poll's);
    # None: worked out when published
    proxies: list | None = None
    # a split poll's id: its parts wrote their groups' health samples under it (window.py), and
    # the groups they judged
    window_id: str | None = None
    judged_elsewhere: set[str] = field(default_factory=set)
    # and the groups whose documents they staged (staging.py: in `built` in their light form)
    staged: Staged | None = None


@dataclass
class PollResult:
    cluster_id: int
    status: str  # ok, degraded, failed, skipped (another poll of this cluster was running)
    groups: int = 0
    duration: float = 0.0
    error: str | None = None
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage (live/stages.py)


def publish_poll(
    cluster: Cluster,
    reading: PollReading,
    *,
    brokers: BrokerReport,
    redis,
    history: HistoryStore,
    thresholds: Thresholds,
    overrides: dict[str, dict],
    started: float,
    spool: HistorySpool | None = None,
    built: dict[str, GroupDocument] | None = None,
) -> PollResult:
    """Build, judge and store this poll's documents; `started` is the poll's monotonic start.
    `built`: documents the parts of a split poll built (parts.py), beside the reading's own;
    those of the reading's `judged_elsewhere` have their health, and their samples in the window
    under its window_id, already; those `staged` are light, their whole documents and history
    rows made by the parts (staging.py)."""
    snapshot, polled_at, stages = reading.snapshot, reading.polled_at, reading.stages
    unreachable = brokers.unreachable()
    with stages.timing("previous documents"):
        # every one when brokers are missing (their groups' queues, and groups no longer
        # listed, are carried over); otherwise only those a group asks for
        unread = unreachable or any(p.scope == "broker" for p in snapshot.problems)
        lazy = not unread
        previous = snapshots.LazyDetails(redis, cluster.pk) if lazy else snapshots.read_details(redis, cluster.pk)
    with stages.timing("documents"):
        docs = build_documents(reading, previous, unreachable)
        docs.update(built or {})
        docs.update(_unlisted(previous, docs, snapshot, unreachable))
        building.mark_retry_topic_groups(docs)
        elsewhere = reading.judged_elsewhere
        here = {group: doc for group, doc in docs.items() if group not in elsewhere}  # judged here
        samples = {group: building.sample(doc, polled_at) for group, doc in here.items()}
    with stages.timing("health"):
        judged = judge(cluster, here, samples, thresholds, overrides, redis, polled_at, reading.retention)
        longest = _longest(thresholds, overrides)  # what health looks back over: the window kept
        window = AlertWindow(judged, redis, cluster.pk, since=polled_at - longest)
    incomplete = sum(1 for d in docs.values() if d.stale or d.problems)
    old_meta = snapshots.read_meta(redis, cluster.pk)
    proxies = reading.proxies
    if proxies is None:
        proxies = documents.proxy_states(snapshot.proxies, old_meta.proxies if old_meta else [], polled_at)
    degraded = incomplete or snapshot.problems or unreachable or any(p.state != "ok" for p in proxies)
    meta = ClusterMeta(
        cluster_id=cluster.pk,
        name=cluster.name,
        polled_at=polled_at,
        duration=0.0,
        status="degraded" if degraded else "ok",
        last_success_at=polled_at,
        groups=len(docs),
        groups_incomplete=incomplete,
        brokers=brokers.states,
        problems=[{"scope": p.scope, "target": p.target, "error": p.error} for p in snapshot.problems],
        proxies=proxies,
    )
    # history first: its state (rows spooled after a failed write, or lost) is part of the meta
    with stages.timing("history"):
        spool = spool or history_spool()
        mine = own_backlog(redis, cluster.pk, spool.host)  # what this host's spool held after its last poll
        staged = reading.staged
        own = history_tables(d for g, d in docs.items() if staged is None or g not in staged.groups)
        tables = staged.tables(own) if staged else own
        meta.history = write_history(spool, history, cluster.name, polled_at, tables, mine)
        meta.spools = record_backlog(redis, cluster.pk, spool.host, meta.history)
    if meta.history:
        log.warning("history of %s not written, %s poll(s) spooled: %s", cluster.name,
                    meta.history["pending_polls"], meta.history["error"])  # fmt: skip
    # the Redis write is the one stage the meta cannot time (it is in it): the result has it
    meta.duration, meta.stages = round(time.monotonic() - started, 3), dict(stages.seconds)
    with stages.timing("Redis write"):
        snapshots.write_poll(redis, cluster.pk, meta=meta, documents=docs, samples=samples, polled_at=polled_at,
                             window_id=reading.window_id, keep_seconds=longest, staged=staged)  # fmt: skip
    with stages.timing("announce"):
        announce(cluster=cluster, meta=meta, documents=docs, window=window, polled_at=polled_at)
    duration = time.monotonic() - started
    return PollResult(cluster.pk, meta.status, groups=len(docs), duration=duration, stages=dict(stages.seconds))


def build_documents(
    reading: PollReading, previous: snapshots.LazyDetails | dict, unreachable: dict[str, str]
) -> dict[str, GroupDocument]:
    """The document of every group the reading read, health still to be set."""
    lazy = isinstance(previous, snapshots.LazyDetails)
    return {
        group: building.build_document(
            progress,
            lag_times=reading.lag_times,
            tag_lags=reading.tag_lags,
            dlq_count=reading.dlq_counts.get(group),
            previous=previous.loader(group) if lazy else previous.get(group),
            unreachable=unreachable,
            in_flight=reading.in_flight,
            in_flight_note=reading.in_flight_note,
        )
        for group, progress in reading.snapshot.groups.items()
    }


def publish_failure(cluster: Cluster, *, error: str, polled_at: float, started: float, redis) -> PollResult:
    """Nothing was readable: keep the last known documents, and say when and why in the meta.
    The brokers were not read either: each is unknown, since the first failed poll, never
    shown in the state the last good poll saw."""
    duration = time.monotonic() - started
    log.warning("poll of cluster %s failed: %s", cluster.name, error)
    meta = snapshots.read_meta(redis, cluster.pk) or ClusterMeta(cluster.pk, cluster.name, polled_at, 0.0, "failed")
    meta.polled_at, meta.duration, meta.status, meta.error = polled_at, round(duration, 3), "failed", error
    meta.skipped = None
    meta.brokers = [_unknown(b, error, polled_at) for b in meta.brokers]
    meta.proxies = [dataclasses.replace(p, state="unknown", error=f"the poll failed: {error}", groups=None)
                    for p in meta.proxies]  # fmt: skip
    snapshots.write_meta(redis, cluster.pk, meta)
    announce(cluster=cluster, meta=meta, documents=None, window=None, polled_at=polled_at)
    return PollResult(cluster.pk, "failed", duration=duration, error=error)


def _unknown(broker: BrokerState, error: str, polled_at: float) -> BrokerState:
    """What a failed poll knows of a broker: its name and address, when it was last seen, and
    no current state or rates."""
    since = broker.unknown_since if broker.state == "unknown" and broker.unknown_since else polled_at
    return dataclasses.replace(
        broker, state="unknown", error=f"the poll failed: {error}", put_tps=None, get_tps=None, unknown_since=since
    )


def _unlisted(
    previous, docs: dict[str, GroupDocument], snapshot: ClusterSnapshot, unreachable: dict[str, str]
) -> dict[str, GroupDocument]:
    """Groups known before that this poll did not list. When a broker could not be read the
    list is incomplete, so they stay, marked stale with the reason; otherwise they are gone."""
    failed = {p.target: p.error for p in snapshot.problems if p.scope == "broker"}
    failed.update(unreachable)
    if not failed:
        return {}
    reason = "not listed in this poll: " + "; ".join(f"{b}: {why}" for b, why in sorted(failed.items()))
    return {
        group: dataclasses.replace(doc, stale=True, stale_reason=reason)
        for group, doc in previous.items()
        if group not in docs
    }


def judge(
    cluster: Cluster,
    docs: dict[str, GroupDocument],
    samples: dict,
    base: Thresholds,
    overrides: dict[str, dict],
    redis,
    polled_at: float,
    retention: RetentionFacts | None = None,
    *,
    keep: bool = True,
) -> dict[str, list[Sample]]:
    """Set each document's health and drain forecast, on its samples in the window (only these
    groups' are read, a range of them at a time); returns the samples each was judged on, newest
    last, unless `keep` is false (a part's: the window holds them, and memory would hold them all)."""
    if not docs:
        return {}
    reader = windows.Reader(redis, cluster.pk, since=polled_at - _longest(base, overrides))
    names = sorted(docs)
    judged = {}
    for at in range(0, len(names), windows.RANGE_GROUPS):
        chunk = names[at : at + windows.RANGE_GROUPS]
        window = reader.samples(chunk)
        for group in chunk:
            doc = docs[group]
            thresholds = base.with_overrides(overrides.get(group, {}))
            reason = doc.stale_reason if doc.stale else None
            found = window.get(group, []) + [samples[group]]
            health = evaluate(found, thresholds, unknown_reason=reason)
            doc.set_drain(forecast(found, thresholds))
            doc.retention, risk = judge_retention(doc, retention, polled_at, settings.RETENTION_HORIZON_SECONDS)
            doc.set_health(health.adding(Finding("RETENTION_RISK", risk)) if risk else health)
            if keep:
                judged[group] = found
    return judged


def _longest(base: Thresholds, overrides: dict[str, dict]) -> float:
    return max([base.window_seconds] + [o.get("window_seconds") or 0 for o in overrides.values()])


class AlertWindow(Mapping):
    """Each group's samples for the alerts' rates (signals.poll_published's `window`): those of the
    groups judged in this process, and the others' (judged by a split poll's parts) read from the
    window only if a rule asks for one."""

    def __init__(self, judged: dict[str, list[Sample]], redis, cluster_id: int, *, since: float):
        self.judged, self.redis, self.cluster_id, self.since = judged, redis, cluster_id, since
        self._rest: dict[str, list[Sample]] | None = None

    def _others(self) -> dict[str, list[Sample]]:
        if self._rest is None:
            self._rest = windows.read(self.redis, self.cluster_id, since=self.since)
        return self._rest

    def __getitem__(self, group: str) -> list[Sample]:
        if group in self.judged:
            return self.judged[group]
        return self._others()[group]

    def __iter__(self):
        return iter({**self._others(), **self.judged})

    def __len__(self) -> int:
        return len({**self._others(), **self.judged})
