"""Poll one cluster: read every group, measure lag in seconds, judge health, store the latest
state in Redis and append it to the history.

A poll never overlaps itself (a Redis lock per cluster), never runs past
ROCKETMQ_POLL_DEADLINE, and keeps what it could read: a broker or group that fails is marked
and its last known data carried over, with its age and the reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
from django.conf import settings

from .. import documents, lagtime, snapshots
from ..health import Thresholds, evaluate
from ..history import GROUP_STATS, QUEUE_OFFSETS, HistoryStore
from ..models import Cluster
from ..redis_client import get_redis
from ..rocketmq import AdminClient, ClientConfig, ClusterSnapshot, RocketMQError, cluster_snapshot, deadline
from ..rocketmq.codes import dlq_topic

log = logging.getLogger(__name__)

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


@dataclass
class PollResult:
    cluster_id: int
    status: str  # ok, partial, failed, skipped (another poll of this cluster was running)
    groups: int = 0
    duration: float = 0.0
    error: str | None = None


def default_thresholds() -> Thresholds:
    return Thresholds(
        window_seconds=settings.HEALTH_WINDOW_SECONDS,
        min_samples=settings.HEALTH_MIN_SAMPLES,
        stall_seconds=settings.HEALTH_STALL_SECONDS,
        min_lag=settings.HEALTH_MIN_LAG,
        retry_rate_per_minute=settings.HEALTH_RETRY_RATE_PER_MINUTE,
    )


def history_store() -> HistoryStore:
    return HistoryStore(
        settings.HISTORY_DIR, flush_rows=settings.HISTORY_FLUSH_ROWS, flush_seconds=settings.HISTORY_FLUSH_SECONDS
    )


def client_config(cluster: Cluster) -> ClientConfig:
    return ClientConfig(
        namesrv_addrs=cluster.namesrv_list,
        credentials=cluster.credentials,
        request_timeout=settings.ROCKETMQ_REQUEST_TIMEOUT,
        connect_timeout=min(3.0, settings.ROCKETMQ_REQUEST_TIMEOUT),
        max_in_flight=settings.ROCKETMQ_POLL_CONCURRENCY,
    )


def poll_cluster(cluster: Cluster, *, redis=None, history: HistoryStore | None = None) -> PollResult:
    redis = redis or get_redis()
    history = history or history_store()
    lock = snapshots.key(cluster.pk, "lock")
    token = uuid.uuid4().hex
    if not redis.set(lock, token, nx=True, ex=settings.ROCKETMQ_POLL_DEADLINE + 60):
        return PollResult(cluster.pk, "skipped")
    try:
        # the ORM is synchronous: read what the poll needs before entering the event loop
        overrides = {o.group: o.as_overrides() for o in cluster.health_overrides.all()}
        return asyncio.run(_poll(cluster, overrides, redis, history))
    finally:
        redis.eval(_RELEASE, 1, lock, token)


async def _poll(cluster: Cluster, overrides: dict, redis, history: HistoryStore) -> PollResult:
    started = time.monotonic()
    polled_at = time.time()
    previous_meta = snapshots.read_meta(redis, cluster.pk) or {}
    async with AdminClient(config=client_config(cluster)) as client:
        try:
            with deadline(settings.ROCKETMQ_POLL_DEADLINE):
                snapshot = await cluster_snapshot(client)
                dlq_counts = await _dlq_counts(client, snapshot)
                lag_times = await lagtime.measure(
                    client,
                    list(snapshot.groups.values()),
                    now_ms=int(polled_at * 1000),
                    redis=redis,
                    cache_key=snapshots.key(cluster.pk, "lagtime"),
                    budget=settings.ROCKETMQ_LAGTIME_BUDGET,
                )
        except RocketMQError as exc:
            duration = time.monotonic() - started
            log.warning("poll of cluster %s failed: %s", cluster.name, exc)
            meta = {
                **previous_meta,
                **_meta_base(cluster, polled_at, duration),
                "status": "failed",
                "error": f"{type(exc).__name__}: {exc}",
            }
            snapshots.write_meta(redis, cluster.pk, meta)
            return PollResult(cluster.pk, "failed", duration=duration, error=meta["error"])

    previous = snapshots.read_details(redis, cluster.pk)
    docs = {
        group: documents.build_document(
            progress, lag_times=lag_times, dlq_count=dlq_counts.get(group), previous=previous.get(group)
        )
        for group, progress in snapshot.groups.items()
    }
    docs.update(_unlisted(previous, snapshot))
    samples = {group: documents.sample(doc, polled_at) for group, doc in docs.items()}
    _judge(cluster, docs, samples, overrides, redis, polled_at)
    incomplete = sum(1 for d in docs.values() if d["stale"] or d["problems"])
    status = "partial" if incomplete or snapshot.problems else "ok"
    meta = {
        **_meta_base(cluster, polled_at, time.monotonic() - started),
        "status": status,
        "error": None,
        "last_success_at": polled_at,
        "groups": len(docs),
        "groups_incomplete": incomplete,
        "brokers": _brokers(snapshot),
        "problems": [{"scope": p.scope, "target": p.target, "error": p.error} for p in snapshot.problems],
    }
    summaries = sorted((documents.summary(d) for d in docs.values()), key=lambda s: s["group"])
    snapshots.write_poll(
        redis, cluster.pk, meta=meta, documents=docs, summaries=summaries, samples=samples, polled_at=polled_at
    )
    history.append(cluster.name, history_tables(docs))
    meta["duration"] = time.monotonic() - started
    return PollResult(cluster.pk, status, groups=len(docs), duration=meta["duration"])


def _unlisted(previous: dict[str, dict], snapshot: ClusterSnapshot) -> dict[str, dict]:
    """Groups known before that this poll did not list. When a broker could not be read the
    list is incomplete, so they stay, marked stale with the reason; otherwise they are gone."""
    failed = [p for p in snapshot.problems if p.scope == "broker"]
    if not failed:
        return {}
    reason = "not listed in this poll: " + "; ".join(f"{p.target}: {p.error}" for p in failed)
    return {
        group: {**doc, "stale": True, "stale_reason": reason}
        for group, doc in previous.items()
        if group not in snapshot.groups
    }


def _judge(cluster, docs: dict, samples: dict, overrides: dict, redis, polled_at: float) -> None:
    base = default_thresholds()
    longest = max([base.window_seconds] + [o.get("window_seconds") or 0 for o in overrides.values()])
    window = snapshots.read_window(redis, cluster.pk, since=polled_at - longest)
    for group, doc in docs.items():
        thresholds = base.with_overrides(overrides.get(group, {}))
        reason = doc["stale_reason"] if doc["stale"] else None
        history = window.get(group, []) + [samples[group]]
        documents.set_health(doc, evaluate(history, thresholds, unknown_reason=reason))


async def _dlq_counts(client: AdminClient, snapshot: ClusterSnapshot) -> dict[str, int | None]:
    """Messages in each group's DLQ. Groups without a DLQ topic have none (0); a DLQ that
    could not be read is unknown (None)."""
    topics = set(await client.topology.topic_list())
    counts: dict[str, int | None] = {g: 0 for g in snapshot.groups if dlq_topic(g) not in topics}
    wanted = [g for g in snapshot.groups if dlq_topic(g) in topics]
    limit = asyncio.Semaphore(32)

    async def count(group: str) -> int | None:
        async with limit:
            try:
                route = await client.topology.topic_route(dlq_topic(group))
                total = 0
                for address in route.master_addrs().values():
                    stats = await client.progress.topic_stats(dlq_topic(group), address)
                    total += sum(o.max_offset - o.min_offset for o in stats.offsets.values())
                return total
            except RocketMQError:
                return None

    for group, value in zip(wanted, await asyncio.gather(*(count(g) for g in wanted)), strict=True):
        counts[group] = value
    return counts


def _meta_base(cluster: Cluster, polled_at: float, duration: float) -> dict:
    return {
        "cluster_id": cluster.pk,
        "name": cluster.name,
        "polled_at": polled_at,
        "duration": round(duration, 3),
    }


def _brokers(snapshot: ClusterSnapshot) -> list[dict]:
    brokers = []
    for name, status in sorted(snapshot.brokers.items()):
        runtime = status.runtime
        brokers.append(
            {
                "name": name,
                "address": status.address,
                "cluster": next((c for c, names in snapshot.cluster_info.clusters.items() if name in names), None),
                "version": runtime.version if runtime else None,
                "put_tps": runtime.put_tps if runtime else None,
                "get_tps": runtime.get_tps if runtime else None,
                "boot_ms": runtime.boot_timestamp if runtime else None,
                "error": status.error.error if status.error else None,
            }
        )
    return brokers


def history_tables(docs: dict[str, dict]) -> dict[str, pa.Table]:
    """This poll's rows for the history store: fresh data only, never carried-over values."""
    queue_rows: dict[str, list] = {name: [] for name in QUEUE_OFFSETS.names}
    group_rows: dict[str, list] = {name: [] for name in GROUP_STATS.names}
    for doc in docs.values():
        if doc["stale"] or doc["as_of"] is None:
            continue
        ts = int(doc["as_of"] * 1000)
        for name, value in (
            ("ts", ts),
            ("group", doc["group"]),
            ("online", doc["online"]),
            ("clients", doc["clients"]),
            ("lag", doc["lag"]),
            ("retry_lag", doc["retry_lag"]),
            ("lag_seconds_max", doc["lag_seconds"]),
            ("consume_tps", doc["consume_tps"]),
            ("dlq_count", doc["dlq_count"]),
            ("health", doc["health"]["state"]),
            ("complete", not doc["problems"]),
        ):
            group_rows[name].append(value)
        for q in doc["queues"]:
            if q["stale_reason"] or q["consumer"] is None:
                continue  # carried over, or no committed offset: nothing was read
            for name, value in (
                ("ts", ts),
                ("group", doc["group"]),
                ("topic", q["topic"]),
                ("broker", q["broker"]),
                ("queue_id", q["queue_id"]),
                ("retry", q["retry"]),
                ("broker_offset", q["max"]),
                ("consumer_offset", q["consumer"]),
                ("min_offset", q["min"]),
                ("lag", q["lag"]),
                ("lag_seconds", q["lag_seconds"]),
                ("last_consume_ms", q["last_consume_ms"]),
                ("client_id", q["clients"][0] if q["clients"] else None),
            ):
                queue_rows[name].append(value)
    return {
        "queue_offsets": pa.Table.from_pydict(queue_rows, schema=QUEUE_OFFSETS),
        "group_stats": pa.Table.from_pydict(group_rows, schema=GROUP_STATS),
    }
