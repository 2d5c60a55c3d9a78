"""High-level reads the console is built on.

`group_progress` gives one group's position per topic and queue across every master of the
cluster, with who holds each queue. `cluster_snapshot` does it for all groups with bounded
concurrency, sharing route and topic-stats lookups, and records a failure per group (or per
broker within a group) instead of letting one failure sink the snapshot. A part that could
not be read is listed in `problems` and its numbers stay None: unknown is not zero.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from .codes import RETRY_PREFIX, retry_topic
from .errors import ConsumerNotOnline, RocketMQError, TopicNotFound, TransportError
from .models import (
    BrokerRuntimeInfo,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    MessageQueue,
    TopicOffset,
    TopicStatsTable,
    is_system_group,
)


@dataclass(slots=True)
class Problem:
    """Something we could not read, and why."""

    scope: str  # route, broker, connection, running-info, topic-stats, group, namesrv
    target: str  # the broker, client or topic concerned
    error: str
    error_type: str

    @classmethod
    def of(cls, scope: str, target: str, exc: BaseException) -> Problem:
        return cls(scope=scope, target=target, error=str(exc), error_type=type(exc).__name__)


@dataclass(slots=True)
class QueueProgress:
    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    min_offset: int | None
    pull_offset: int | None
    last_consume_time: int | None
    clients: tuple[str, ...] = ()

    @property
    def lag(self) -> int:
        return self.broker_offset - self.consumer_offset

    @property
    def retry(self) -> bool:
        return self.topic.startswith(RETRY_PREFIX)

    @property
    def offset_expired(self) -> bool | None:
        """Consumer offset below the queue's min offset: messages lost to retention."""
        return None if self.min_offset is None else self.consumer_offset < self.min_offset

    @property
    def queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)


@dataclass(slots=True)
class GroupProgress:
    group: str
    fetched_at: float
    queues: list[QueueProgress] = field(default_factory=list)
    consume_tps: float | None = None
    connection: ConsumerConnection | None = None
    online: bool | None = None  # None: could not be determined
    running_info: dict[str, ConsumerRunningInfo] = field(default_factory=dict)
    brokers: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # min and max offset of every queue seen, also those only the clients report (broadcasting)
    bounds: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    # queues of the topics an online group subscribes to that have no committed offset: the
    # broker's consume stats leave them out, yet they may be exactly the ones nobody consumes
    uncommitted: list[MessageQueue] = field(default_factory=list)

    @property
    def topics(self) -> list[str]:
        return sorted({q.topic for q in self.queues if not q.retry})

    @property
    def main_queues(self) -> list[QueueProgress]:
        return [q for q in self.queues if not q.retry]

    @property
    def retry_queues(self) -> list[QueueProgress]:
        return [q for q in self.queues if q.retry]

    @property
    def total_lag(self) -> int:
        """Lag of the subscribed topics, without the retry topic."""
        return sum(q.lag for q in self.main_queues)

    @property
    def diff_total(self) -> int:
        """mqadmin's "Consume Diff Total": every row, the retry topic included."""
        return sum(q.lag for q in self.queues)

    @property
    def complete(self) -> bool:
        return not self.problems


@dataclass(slots=True)
class BrokerStatus:
    name: str
    address: str
    runtime: BrokerRuntimeInfo | None = None
    error: Problem | None = None


@dataclass(slots=True)
class ClusterSnapshot:
    fetched_at: float
    duration: float
    cluster_info: ClusterInfo
    brokers: dict[str, BrokerStatus]
    groups: dict[str, GroupProgress]
    problems: list[Problem] = field(default_factory=list)


class SnapshotCache:
    """Lookups shared by every group of one snapshot (one topic-stats call per broker and
    topic, whatever the number of groups consuming it)."""

    def __init__(self, client, masters: dict[str, str] | None = None):
        self.client = client
        self.masters = masters
        self._topic_stats: dict[tuple[str, str], asyncio.Future] = {}

    async def cluster_masters(self) -> dict[str, str]:
        if self.masters is None:
            self.masters = (await self.client.topology.cluster_info(max_age=10.0)).masters()
        return self.masters

    async def topic_stats(self, topic: str, address: str) -> TopicStatsTable:
        key = (address, topic)
        if key not in self._topic_stats:
            self._topic_stats[key] = asyncio.ensure_future(self.client.progress.topic_stats(topic, address))
        return await asyncio.shield(self._topic_stats[key])


async def group_progress(
    client, group: str, *, running_info: bool = True, cache: SnapshotCache | None = None
) -> GroupProgress:
    cache = cache or SnapshotCache(client)
    result = GroupProgress(group=group, fetched_at=time.time())
    result.brokers = await _group_brokers(client, group, cache, result)
    names = sorted(result.brokers)
    stats_results = await asyncio.gather(
        *(client.progress.consume_stats(group, result.brokers[n]) for n in names),
        _connection(client, group, result),
        return_exceptions=True,
    )
    connection_broker = stats_results.pop()
    tps_parts = []
    offsets = {}
    for name, stats in zip(names, stats_results, strict=True):
        if isinstance(stats, BaseException):
            _reraise_unexpected(stats)
            result.problems.append(Problem.of("broker", name, stats))
            continue
        offsets.update(stats.offsets)
        if stats.consume_tps is not None:
            tps_parts.append(stats.consume_tps)
    result.consume_tps = sum(tps_parts) if tps_parts else None
    if running_info and result.online and isinstance(connection_broker, str):
        await _running_info(client, group, connection_broker, result)
    result.uncommitted = await _uncommitted_queues(client, result, set(offsets))
    held = {mq for info in result.running_info.values() for mq in info.mq_table}
    result.bounds = await _queue_bounds(cache, set(offsets) | held | set(result.uncommitted), result)
    holders = _holders(result.running_info)
    result.queues = [
        QueueProgress(
            topic=mq.topic,
            broker_name=mq.broker_name,
            queue_id=mq.queue_id,
            broker_offset=w.broker_offset,
            consumer_offset=w.consumer_offset,
            min_offset=result.bounds[mq].min_offset if mq in result.bounds else None,
            pull_offset=w.pull_offset,
            last_consume_time=w.last_timestamp or None,
            clients=holders.get(mq, ()),
        )
        for mq, w in sorted(offsets.items())
    ]
    return result


async def _group_brokers(client, group: str, cache: SnapshotCache, result: GroupProgress) -> dict[str, str]:
    # Java admin finds a group through the route of its retry topic. A group that never
    # heartbeated has none; then every master of the cluster is asked.
    try:
        route = await client.topology.topic_route(retry_topic(group))
        masters = route.master_addrs()
        if masters:
            return masters
    except TopicNotFound:
        pass
    except TransportError as exc:
        result.problems.append(Problem.of("route", retry_topic(group), exc))
    return dict(await cache.cluster_masters())


async def _connection(client, group: str, result: GroupProgress) -> str | None:
    """Fill in the group's clients from the first broker that answers; return that broker's
    address (the one to relay running-info calls through)."""
    last_error = None
    for name in sorted(result.brokers):
        address = result.brokers[name]
        try:
            result.connection = await client.progress.consumer_connection(group, address)
            result.online = bool(result.connection.connections)
            return address
        except ConsumerNotOnline:
            result.online = False
            return None
        except RocketMQError as exc:
            last_error = exc
    if last_error is not None:
        result.problems.append(Problem.of("connection", group, last_error))
    return None


async def _uncommitted_queues(client, result: GroupProgress, committed: set) -> list[MessageQueue]:
    if not result.online or result.connection is None:
        return []
    topics = sorted(t for t in result.connection.subscriptions if not t.startswith(RETRY_PREFIX))
    missing = []
    for topic in topics:
        try:
            route = await client.topology.topic_route(topic)
        except RocketMQError as exc:
            result.problems.append(Problem.of("route", topic, exc))
            continue
        missing += [mq for mq in route.read_queues() if mq not in committed and mq.broker_name in result.brokers]
    return missing


async def _queue_bounds(cache: SnapshotCache, queues: set, result: GroupProgress) -> dict[MessageQueue, TopicOffset]:
    wanted = sorted({(mq.topic, mq.broker_name) for mq in queues if mq.broker_name in result.brokers})
    answers = await asyncio.gather(
        *(cache.topic_stats(topic, result.brokers[broker]) for topic, broker in wanted), return_exceptions=True
    )
    bounds = {}
    for (topic, broker), answer in zip(wanted, answers, strict=True):
        if isinstance(answer, BaseException):
            _reraise_unexpected(answer)
            result.problems.append(Problem.of("topic-stats", f"{topic}@{broker}", answer))
            continue
        bounds.update({mq: o for mq, o in answer.offsets.items() if mq in queues})
    return bounds


async def _running_info(client, group: str, address: str, result: GroupProgress) -> None:
    client_ids = sorted(set(result.connection.client_ids))
    answers = await asyncio.gather(
        *(client.progress.consumer_running_info(group, cid, address) for cid in client_ids), return_exceptions=True
    )
    for client_id, answer in zip(client_ids, answers, strict=True):
        if isinstance(answer, BaseException):
            _reraise_unexpected(answer)
            result.problems.append(Problem.of("running-info", client_id, answer))
        else:
            result.running_info[client_id] = answer


def _holders(running_info: dict[str, ConsumerRunningInfo]) -> dict[MessageQueue, tuple[str, ...]]:
    holders: dict[MessageQueue, list[str]] = {}
    for client_id, info in sorted(running_info.items()):
        for mq, queue_info in info.mq_table.items():
            if not queue_info.dropped:
                holders.setdefault(mq, []).append(client_id)
    return {mq: tuple(ids) for mq, ids in holders.items()}


def _reraise_unexpected(exc: BaseException) -> None:
    # Only our typed errors are per-part failures; anything else is a bug or a cancellation.
    if not isinstance(exc, RocketMQError):
        raise exc


async def cluster_snapshot(
    client,
    *,
    cluster: str | None = None,
    groups: list[str] | None = None,
    concurrency: int = 64,
    running_info: bool = True,
    include_system_groups: bool = False,
) -> ClusterSnapshot:
    """Every group's progress. Raises only when the name server cannot be read at all."""
    started = time.monotonic()
    fetched_at = time.time()
    info = await client.topology.cluster_info()
    masters = info.masters(cluster)
    cache = SnapshotCache(client, masters)
    brokers = {name: BrokerStatus(name, address) for name, address in masters.items()}
    problems: list[Problem] = []
    configs = await asyncio.gather(
        *(_broker_status(client, status) for status in brokers.values()), return_exceptions=True
    )
    names: set[str] = set(groups or [])
    for status, answer in zip(brokers.values(), configs, strict=True):
        if isinstance(answer, BaseException):
            _reraise_unexpected(answer)
            status.error = Problem.of("broker", status.name, answer)
            problems.append(status.error)
        elif groups is None:
            names.update(g for g in answer if include_system_groups or not is_system_group(g))
    limit = asyncio.Semaphore(concurrency)

    async def one(group: str) -> GroupProgress:
        async with limit:
            try:
                return await group_progress(client, group, running_info=running_info, cache=cache)
            except RocketMQError as exc:
                failed = GroupProgress(group=group, fetched_at=time.time())
                failed.problems.append(Problem.of("group", group, exc))
                return failed

    ordered = sorted(names)
    progress = await asyncio.gather(*(one(g) for g in ordered))
    return ClusterSnapshot(
        fetched_at=fetched_at,
        duration=time.monotonic() - started,
        cluster_info=info,
        brokers=brokers,
        groups=dict(zip(ordered, progress, strict=True)),
        problems=problems,
    )


async def _broker_status(client, status: BrokerStatus) -> list[str]:
    runtime, groups = await asyncio.gather(
        client.topology.broker_runtime_info(status.address),
        client.topology.subscription_groups(status.address),
    )
    status.runtime = runtime
    return list(groups)
