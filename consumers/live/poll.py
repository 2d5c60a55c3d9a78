"""Poll one cluster: read every group from the brokers, then publish what was read.

A poll never overlaps itself (a Redis lock per cluster) and never runs past its deadline
(ROCKETMQ_POLL_DEADLINE, longer for a cluster of many groups: config.poll_deadline). Each
broker is read under its own ROCKETMQ_BROKER_DEADLINE, so a dead or hung broker fails alone
and is named, while the others' data is fresh in the same poll. Only when the name server
cannot be read at all does the poll fail as a whole; then the last known state stays, and its
age says it is stale.
"""

from __future__ import annotations

import time

from django.conf import settings

from ..clusters.connect import run_on_cluster
from ..jobs.redis_client import get_redis
from ..models import Cluster
from ..rocketmq import AdminClient, RocketMQError, cluster_snapshot
from ..rocketmq.dlq import dlq_sizes
from ..rocketmq.proxies import ProxyAsk
from . import brokers, inflight, lagtime, proxy_grace, retention, snapshots, taglag
from .config import default_thresholds, history_store, poll_deadline
from .documents import proxy_states
from .history import HistoryStore
from .notes import METRICS_NOT_READ
from .polllock import PollLock
from .publish import PollReading, PollResult, publish_failure, publish_poll
from .stages import Stages


def poll_cluster(cluster: Cluster, *, redis=None, history: HistoryStore | None = None) -> PollResult:
    redis = redis or get_redis()
    lock = PollLock(redis, snapshots.key(cluster.pk, "lock"))
    if not lock.acquire(wait_for_silent_holder=True):
        return _skipped(cluster, lock, redis)
    try:
        started, polled_at = time.monotonic(), time.time()
        last = snapshots.read_meta(redis, cluster.pk)
        try:
            reading = run_on_cluster(
                cluster,
                lambda client: read_cluster(client, cluster, redis, polled_at),
                seconds=poll_deadline(last.groups if last else None),
            )
        except RocketMQError as exc:
            error = f"{type(exc).__name__}: {exc}"
            return publish_failure(cluster, error=error, polled_at=polled_at, started=started, redis=redis)
        with reading.stages.timing("known brokers"):
            known = brokers.reconcile(cluster, reading.snapshot, now=polled_at)
        return publish_poll(
            cluster,
            reading,
            brokers=known,
            redis=redis,
            history=history or history_store(),
            thresholds=default_thresholds(),
            overrides={o.group: o.as_overrides() for o in cluster.health_overrides.all()},
            started=started,
        )
    finally:
        lock.release()


def _skipped(cluster: Cluster, lock: PollLock, redis) -> PollResult:
    """Say why this poll did not run, on the cluster's meta (kept until the next poll ends), so
    stale data says polls are being skipped and behind whom, not only "not refreshed"."""
    now = time.time()
    held = lock.holder()
    why = held.describe(now) if held else "another poll of this cluster had just finished"
    meta = snapshots.read_meta(redis, cluster.pk)
    if meta is not None:
        first = meta.skipped["since"] if meta.skipped else now
        meta.skipped = {"since": first, "at": now, "why": why}
        snapshots.write_meta(redis, cluster.pk, meta)
    return PollResult(cluster.pk, "skipped", error=why)


async def read_cluster(client: AdminClient, cluster: Cluster, redis, polled_at: float) -> PollReading:
    """Everything a poll reads: each group's progress, DLQ sizes and exact lag seconds."""
    stages = Stages()
    ask, proxies = _proxy_ask(cluster, redis), None
    with stages.timing("brokers read"):
        snapshot = await cluster_snapshot(client, broker_deadline=settings.ROCKETMQ_BROKER_DEADLINE, proxies=ask)
    if ask.addresses:
        old_meta = snapshots.read_meta(redis, cluster.pk)
        proxies = proxy_states(snapshot.proxies, old_meta.proxies if old_meta else [], polled_at)
        proxy_grace.hold(snapshot, ask.known, proxy_grace.restarting(proxies, polled_at))
        # groups with proxy clients now, and those that had some and are unknown now (a proxy
        # failing or restarting): remembered, so the grace applies when the proxy is back
        known = [g for g, p in snapshot.groups.items() if p.via_proxy or p.proxy_clients]
        known += [g for g in ask.known if g in snapshot.groups and snapshot.groups[g].online is None]
        _remember_proxy_groups(redis, cluster, sorted(set(known)), ask.next_cursor)
    unreadable = {p.target for p in snapshot.problems if p.scope == "broker"}
    with stages.timing("DLQ sizes"):
        dlq_counts = await dlq_sizes(client, list(snapshot.groups), skip_brokers=unreadable)
    with stages.timing("lag seconds"):
        lag_times = await lagtime.measure(
            client,
            list(snapshot.groups.values()),
            now_ms=int(polled_at * 1000),
            redis=redis,
            cache_key=snapshots.key(cluster.pk, "lagtime"),
            budget=settings.ROCKETMQ_LAGTIME_BUDGET,
        )
    with stages.timing("tag lag"):
        tag_lags = await _tag_lags(client, cluster, snapshot, redis)
    with stages.timing("retention"):
        kept = await retention.read(client, snapshot, lag_times, now=polled_at, redis=redis,
                                    cache_key=snapshots.key(cluster.pk, "retention"),
                                    horizon=settings.RETENTION_HORIZON_SECONDS)  # fmt: skip
    reading = PollReading(snapshot=snapshot, polled_at=polled_at, lag_times=lag_times, dlq_counts=dlq_counts,
                          stages=stages, proxies=proxies, tag_lags=tag_lags, retention=kept)  # fmt: skip
    if cluster.broker_metrics:
        with stages.timing("in flight"):
            reading.in_flight, reading.in_flight_note = await _in_flight(cluster, snapshot)
    return reading


async def _tag_lags(client: AdminClient, cluster: Cluster, snapshot, redis) -> taglag.TagLags:
    groups = list(snapshot.groups.values())
    key = snapshots.key(cluster.pk, "subscriptions")
    taglag.remember(redis, key, groups)
    return await taglag.measure(
        client,
        groups,
        redis=redis,
        cache_key=snapshots.key(cluster.pk, "taglag"),
        budget=settings.ROCKETMQ_TAGLAG_BUDGET,
        addresses={s.name: s.address for s in snapshot.brokers.values() if not s.error and s.address},
        remembered=taglag.recall(redis, key, groups),
    )


def _proxy_ask(cluster: Cluster, redis) -> ProxyAsk:
    """What to ask the cluster's proxies this poll: the groups they knew clients of last time
    first, then the others in rotation from where the last poll stopped."""
    if not cluster.proxy_list:
        return ProxyAsk([])
    known = frozenset(
        m.decode() if isinstance(m, bytes) else m for m in redis.smembers(snapshots.key(cluster.pk, "proxy-groups"))
    )
    cursor = int(redis.get(snapshots.key(cluster.pk, "proxy-cursor")) or 0)
    return ProxyAsk(cluster.proxy_list, known, settings.ROCKETMQ_PROXY_GROUPS_PER_POLL, cursor)


def _remember_proxy_groups(redis, cluster: Cluster, groups: list[str], cursor: int) -> None:
    pipe = redis.pipeline()
    pipe.delete(snapshots.key(cluster.pk, "proxy-groups"))
    if groups:
        pipe.sadd(snapshots.key(cluster.pk, "proxy-groups"), *groups)
    pipe.set(snapshots.key(cluster.pk, "proxy-cursor"), cursor)
    pipe.execute()


async def _in_flight(cluster: Cluster, snapshot) -> tuple[dict[str, int] | None, str | None]:
    """POP messages in flight per group, from every broker's metrics, or None and why: a sum
    that misses a broker would be a smaller number that looks complete."""
    readable = {s.name: s.address for s in snapshot.brokers.values() if not s.error}
    urls = inflight.metrics_urls(cluster.broker_metrics, readable)
    totals, errors = await inflight.read(urls, timeout=settings.ROCKETMQ_BROKER_DEADLINE)
    errors.update({b: "no metrics URL, or the broker itself unreadable" for b in snapshot.brokers if b not in urls})
    if errors:
        return None, METRICS_NOT_READ % {"errors": "; ".join(f"{b}: {e}" for b, e in sorted(errors.items()))}
    return totals, None
