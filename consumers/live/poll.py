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
from dataclasses import dataclass

from django.conf import settings

from ..clusters.connect import run_on_cluster
from ..jobs import collector
from ..jobs.redis_client import get_redis
from ..models import Cluster
from ..rocketmq import AdminClient, RocketMQError, extend_deadline
from ..rocketmq.snapshot import Listing, list_cluster, read_listing
from . import brokers, parts, reading, snapshots
from .config import default_thresholds, history_store, poll_deadline
from .history import HistoryStore
from .notes import METRICS_NOT_ENABLED
from .polllock import PollLock
from .publish import PollReading, PollResult, publish_failure, publish_poll
from .stages import Stages


def poll_cluster(cluster: Cluster, *, redis=None, history: HistoryStore | None = None, send=None) -> PollResult:
    """`send(cluster_id, poll_id, part, deadline_at)`: how a poll of more than
    ROCKETMQ_POLL_PART_GROUPS groups reaches other workers (parts.py); without it (or with fewer
    groups) this process reads the whole cluster."""
    with collector.held_off():
        return _poll(cluster, redis or get_redis(), history, send)


def _poll(cluster: Cluster, redis, history: HistoryStore | None, send) -> PollResult:
    lock = PollLock(redis, snapshots.key(cluster.pk, "lock"))
    if not lock.acquire(wait_for_silent_holder=True):
        return _skipped(cluster, lock, redis)
    try:
        started, polled_at = time.monotonic(), time.time()
        last = snapshots.read_meta(redis, cluster.pk)
        seconds = poll_deadline(last.groups if last else None)
        # a cluster never polled: its deadline is the one for the groups it lists (read_cluster)
        fresh = started if last is None else None
        try:
            found = run_on_cluster(
                cluster,
                lambda client: read_cluster(client, cluster, redis, polled_at, split=send is not None, fresh=fresh),
                seconds=seconds,
            )
        except RocketMQError as exc:
            error = f"{type(exc).__name__}: {exc}"
            return publish_failure(cluster, error=error, polled_at=polled_at, started=started, redis=redis)
        if last is None:
            seconds = max(seconds, poll_deadline(_listed(found)))
        if isinstance(found, Listed):
            found, built, known = _read_in_parts(cluster, found, redis, polled_at, started + seconds, send)
        else:
            with found.stages.timing("known brokers"):
                built, known = None, brokers.reconcile(cluster, found.snapshot, now=polled_at)
        return publish_poll(
            cluster,
            found,
            brokers=known,
            redis=redis,
            history=history or history_store(),
            thresholds=default_thresholds(),
            overrides={o.group: o.as_overrides() for o in cluster.health_overrides.all()},
            started=started,
            built=built,
        )
    finally:
        lock.release()


@dataclass
class Listed:
    """A cluster with too many groups for one process: listed, its parts still to be read."""

    listing: Listing
    stages: Stages
    in_flight: tuple[dict[str, int] | None, str | None] = (None, METRICS_NOT_ENABLED)


def _read_in_parts(cluster: Cluster, listed: Listed, redis, polled_at: float, deadline: float, send):
    """The split poll's reading (its snapshot lists no group: the parts built their documents),
    the documents, and the brokers' report."""
    stages, snapshot = listed.stages, listed.listing.snapshot({}, {})
    with stages.timing("known brokers"):
        known = brokers.reconcile(cluster, snapshot, now=polled_at)
    with stages.timing("parts read"):
        built, merged = parts.read_in_parts(
            cluster,
            listed.listing,
            redis=redis,
            polled_at=polled_at,
            deadline_at=time.time() + (deadline - time.monotonic()),
            unreachable=known.unreachable(),
            in_flight=listed.in_flight,
            send=send,
        )
    for stage, seconds in merged.stages.items():  # the parts' work, summed (parts.py)
        stages.seconds[f"parts: {stage}"] = seconds
    if cluster.proxy_list:
        reading.remember_proxy_groups(redis, cluster, sorted(set(merged.proxy_groups)))
    found = PollReading(snapshot=listed.listing.snapshot({}, merged.proxies), polled_at=polled_at, stages=stages,
                        retention=parts.retention_of(merged), in_flight=listed.in_flight[0],
                        in_flight_note=listed.in_flight[1], window_id=merged.window_id,
                        judged_elsewhere=merged.judged, staged=merged.staged)  # fmt: skip
    return found, built, known


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


def _listed(found: PollReading | Listed) -> int:
    return len(found.listing.names) if isinstance(found, Listed) else len(found.snapshot.groups)


async def read_cluster(
    client: AdminClient, cluster: Cluster, redis, polled_at: float, *, split: bool = False, fresh: float | None = None
) -> PollReading | Listed:
    """Everything a poll reads in one process: each group's progress, DLQ sizes, exact lag
    seconds. With `split`, a cluster of more than ROCKETMQ_POLL_PART_GROUPS groups is only
    listed here (its parts are read by parts.py). `fresh`: the poll's start (monotonic) when no
    poll of the cluster ended yet, so no deadline knew its groups: once listed, they give it."""
    stages = Stages()
    ask = reading.proxy_ask(cluster, redis)
    with stages.timing("brokers read"):
        listing = await list_cluster(client, broker_deadline=settings.ROCKETMQ_BROKER_DEADLINE)
        if fresh is not None:
            extend_deadline(fresh + poll_deadline(len(listing.names)))
        if split and len(listing.names) > settings.ROCKETMQ_POLL_PART_GROUPS:
            listed = Listed(listing, stages)
            if cluster.broker_metrics:
                with stages.timing("in flight"):
                    listed.in_flight = await reading.in_flight(cluster, listing.snapshot({}, {}))
            return listed
        snapshot = await read_listing(client, listing, ask, broker_deadline=settings.ROCKETMQ_BROKER_DEADLINE)
    found, asked = await reading.read_rest(client, cluster, snapshot, redis, polled_at, stages=stages, ask=ask)
    if ask.addresses:
        reading.remember_proxy_groups(redis, cluster, asked)
        reading.remember_cursor(redis, cluster, ask.next_cursor)
    if cluster.broker_metrics:
        with stages.timing("in flight"):
            found.in_flight, found.in_flight_note = await reading.in_flight(cluster, snapshot)
    return found
