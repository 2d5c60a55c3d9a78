"""High-level reads the console is built on.

`read_groups` gives each group's position per topic and queue across every master of the
cluster, with who holds each queue. It works in a few pipelined phases over all the groups
at once (routes, consume stats and connections, running info, topic bounds), so thousands of
groups cost thousands of requests but only a handful of round trips. A part that could not be
read is listed in the group's `problems` and its numbers stay None: unknown is not zero.
`group_progress` is the same for one group; `cluster_snapshot` for every group of a cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from .codes import RETRY_PREFIX, retry_topic
from .errors import BrokerError, ConsumerNotOnline, RocketMQError, TopicNotFound, TransportError
from .models import (
    BrokerRuntimeInfo,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    MessageQueue,
    TopicOffset,
    TopicRoute,
    TopicStatsTable,
    is_system_group,
)
from .proxies import ProxyAsk, ProxyStatus, merge, read_proxies
from .remoting import deadline

# A broker waits up to 10 s for a client to answer a running-info call.
RUNNING_INFO_TIMEOUT = 12.0


@dataclass(slots=True)
class Problem:
    """Something we could not read, and why."""

    scope: str  # route, broker, connection, running-info, topic-stats, group, namesrv, proxy
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
    # its clients are known only to rocketmq-proxy (RocketMQ 5 gRPC consumers, POP): the broker
    # assigns messages per request, so there is no per-queue holder and no running info
    via_proxy: bool = False
    # mixed groups: clients only a proxy knows (gRPC) beside the ones the brokers know
    proxy_clients: list[str] = field(default_factory=list)
    running_info: dict[str, ConsumerRunningInfo] = field(default_factory=dict)
    brokers: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # min and max offset of every queue seen, also those only the clients report (broadcasting)
    bounds: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    # queues of the topics an online group subscribes to that have no committed offset: the
    # broker's consume stats leave them out, yet they may be exactly the ones nobody consumes
    uncommitted: list[MessageQueue] = field(default_factory=list)
    # its subscription group says consumeMessageOrderly: POP consumers (gRPC FIFO) get each
    # queue's messages in order, one message group at a time. None: the configs were not read
    fifo: bool | None = None
    # the brokers whose subscription config says consumeEnable false (paused: they refuse its
    # pulls and pops). None: the configs were not read
    paused_on: list[str] | None = None
    # topics this group consumes with POP by the brokers' request modes (mqadmin setConsumeMode)
    pop_topics: list[str] = field(default_factory=list)

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
    error: Problem | None = None  # the broker could not be read: left out of the poll
    runtime_error: str | None = None  # only its runtime figures could not be read


@dataclass(slots=True)
class ClusterSnapshot:
    fetched_at: float
    duration: float
    cluster_info: ClusterInfo
    brokers: dict[str, BrokerStatus]
    groups: dict[str, GroupProgress]
    problems: list[Problem] = field(default_factory=list)
    proxies: dict[str, ProxyStatus] = field(default_factory=dict)


async def group_progress(client, group: str, *, running_info: bool = True) -> GroupProgress:
    masters = (await client.topology.cluster_info(max_age=10.0)).masters()
    return (await read_groups(client, [group], masters=masters, running_info=running_info))[group]


async def cluster_snapshot(
    client,
    *,
    cluster: str | None = None,
    groups: list[str] | None = None,
    running_info: bool = True,
    include_system_groups: bool = False,
    broker_deadline: float | None = None,
    proxies: list[str] | ProxyAsk = (),
) -> ClusterSnapshot:
    """Every group's progress. Raises only when the name server cannot be read at all.

    Each broker is first probed on its own, under `broker_deadline`, all at once: a broker
    that does not answer (dead, hung, refusing) fails alone, is named in the problems, and is
    left out of the rest of the reads, so one hung broker costs one probe, not the poll."""
    started = time.monotonic()
    fetched_at = time.time()
    info = await client.topology.cluster_info()
    masters = info.masters(cluster)
    brokers = {name: BrokerStatus(name, address) for name, address in masters.items()}

    async def probe(status: BrokerStatus) -> tuple[dict, dict[str, set[str]]]:
        try:
            with deadline(broker_deadline) if broker_deadline else contextlib.nullcontext():
                try:
                    status.runtime = await client.topology.broker_runtime_info(status.address)
                except BrokerError as exc:
                    # it answered, so its queues can be read; only its runtime figures are unknown
                    # (5.3 answers SYSTEM_ERROR here for a moment after it boots)
                    status.runtime_error = f"{type(exc).__name__}: {exc}"
                if groups is not None:
                    return {}, {}
                configs = await client.topology.subscription_groups(status.address)
                try:
                    modes = await client.topology.pop_modes(status.address)
                except BrokerError:  # refused (an ACL, an old broker): POP is then told by the clients
                    modes = {}
                return configs, modes
        except RocketMQError as exc:
            status.error = Problem.of("broker", status.name, exc)
            return {}, {}

    names: set[str] = set(groups or [])
    fifo: set[str] = set()
    paused: dict[str, list[str]] = {}
    pop: dict[str, set[str]] = {}
    answers = await asyncio.gather(*(probe(s) for s in brokers.values()))
    for status, (configs, modes) in zip(brokers.values(), answers, strict=True):
        for group, config in configs.items():
            if not config.consume_enable:
                paused.setdefault(group, []).append(status.name)
        names.update(g for g in configs if include_system_groups or not is_system_group(g))
        fifo.update(g for g, config in configs.items() if config.consume_message_orderly)
        for group, topics in modes.items():
            pop.setdefault(group, set()).update(topics)
    problems = [s.error for s in brokers.values() if s.error]
    unreadable = {s.name: s.error for s in brokers.values() if s.error}
    proxy_status: dict[str, ProxyStatus] = {}
    progress = await read_groups(
        client,
        sorted(names),
        masters=masters,
        running_info=running_info,
        unreadable=unreadable,
        proxies=proxies,
        proxy_status=proxy_status,
        proxy_deadline=broker_deadline,
    )
    if groups is None and len(unreadable) < len(brokers):  # some broker's configs were read
        for name, group in progress.items():
            group.fifo = name in fifo
            group.paused_on = sorted(paused.get(name, ()))
            group.pop_topics = sorted(pop.get(name, ()))
    return ClusterSnapshot(
        fetched_at=fetched_at,
        duration=time.monotonic() - started,
        cluster_info=info,
        brokers=brokers,
        groups=progress,
        problems=problems,
        proxies=proxy_status,
    )


async def read_groups(
    client,
    groups: list[str],
    *,
    masters: dict[str, str],
    running_info: bool = True,
    unreadable: dict[str, Problem] | None = None,
    proxies: list[str] | ProxyAsk = (),
    proxy_status: dict[str, ProxyStatus] | None = None,
    proxy_deadline: float | None = None,
) -> dict[str, GroupProgress]:
    """The progress of every given group, read in pipelined phases over all of them.

    Brokers in `unreadable` (and any broker that times out on every request of the first
    phase) are not asked again: each group on them gets that broker's problem instead.
    Groups no broker knows a client of are asked of the `proxies` (gRPC clients); how each
    proxy answered goes into `proxy_status`."""
    now = time.time()
    unreadable = dict(unreadable or {})
    result = {g: GroupProgress(group=g, fetched_at=now) for g in groups}
    await _locate(client, result, masters)

    # consume stats on each master of a group, its connection list from its first master
    stats_targets = [(g, name) for g, p in result.items() for name in sorted(p.brokers) if name not in unreadable]
    names = {result[g].brokers[b]: b for g, b in stats_targets}
    addresses = sorted(names)
    dumps = await client.progress.offset_topics_many(addresses)
    for address, dump in zip(addresses, dumps, strict=True):
        if isinstance(dump, TransportError):  # no answer at all: not asked again this poll
            unreadable[names[address]] = Problem.of("broker", names[address], dump)
    stats_targets = [(g, b) for g, b in stats_targets if b not in unreadable]
    # a broker that refused the dump (an ACL, an old version) is asked group by group as before
    topics = {a: d for a, d in zip(addresses, dumps, strict=True) if not isinstance(d, RocketMQError)}
    stats = await client.progress.consume_stats_many([(g, result[g].brokers[b]) for g, b in stats_targets], topics)
    unreadable.update(_silent_brokers(stats_targets, stats))
    offsets: dict[str, dict] = {g: {} for g in groups}
    for (group, broker), answer in zip(stats_targets, stats, strict=True):
        if broker not in unreadable:
            _take_stats(result[group], broker, answer, offsets[group])
    for progress in result.values():
        progress.problems += [unreadable[b] for b in sorted(progress.brokers) if b in unreadable]
    connection_order = {g: [b for b in sorted(p.brokers) if b not in unreadable] for g, p in result.items()}
    relay = await _connections(client, result, connection_order)
    ask = proxies if isinstance(proxies, ProxyAsk) else ProxyAsk(list(proxies))
    if ask.addresses:
        statuses = await _proxy_connections(client, result, ask, proxy_deadline)
        if proxy_status is not None:
            proxy_status.update(statuses)
    for group, progress in result.items():
        if progress.brokers and not offsets[group] and _all_failed(progress):
            progress.problems.append(
                Problem("group", group, progress.problems[0].error, progress.problems[0].error_type)
            )

    if running_info:
        await _running_info(client, result, relay)
    await _uncommitted(client, result, offsets, unreadable)
    await _bounds(client, result, offsets, unreadable)
    for group, progress in result.items():
        holders = _holders(progress.running_info)
        progress.queues = [
            QueueProgress(
                topic=mq.topic,
                broker_name=mq.broker_name,
                queue_id=mq.queue_id,
                broker_offset=w.broker_offset,
                consumer_offset=w.consumer_offset,
                min_offset=progress.bounds[mq].min_offset if mq in progress.bounds else None,
                pull_offset=w.pull_offset,
                last_consume_time=w.last_timestamp or None,
                clients=holders.get(mq, ()),
            )
            for mq, w in sorted(offsets[group].items())
        ]
    return result


async def _locate(client, result: dict[str, GroupProgress], masters: dict[str, str]) -> None:
    # Java admin finds a group through the route of its retry topic. A group that never
    # heartbeated has none; then every master of the cluster is asked.
    routes = await client.topology.topic_routes([retry_topic(g) for g in result])
    for group, progress in result.items():
        route = routes[retry_topic(group)]
        if isinstance(route, TopicRoute) and route.master_addrs():
            progress.brokers = route.master_addrs()
            continue
        if isinstance(route, TransportError):
            progress.problems.append(Problem.of("route", retry_topic(group), route))
        progress.brokers = dict(masters)


def _take_stats(progress: GroupProgress, broker: str, answer: ConsumeStats | RocketMQError, offsets: dict) -> None:
    if isinstance(answer, RocketMQError):
        progress.problems.append(Problem.of("broker", broker, answer))
        return
    offsets.update(answer.offsets)
    if answer.consume_tps is not None:
        progress.consume_tps = (progress.consume_tps or 0.0) + answer.consume_tps


def _silent_brokers(targets: list[tuple[str, str]], answers: list) -> dict[str, Problem]:
    """Brokers that failed at the transport level on every request sent to them."""
    failed: dict[str, Problem] = {}
    answered: set[str] = set()
    for (_, broker), answer in zip(targets, answers, strict=True):
        if isinstance(answer, TransportError):
            failed.setdefault(broker, Problem.of("broker", broker, answer))
        else:
            answered.add(broker)
    return {b: p for b, p in failed.items() if b not in answered}


def _all_failed(progress: GroupProgress) -> bool:
    failed = {p.target for p in progress.problems if p.scope == "broker"}
    return failed >= set(progress.brokers)


async def _connections(client, result: dict[str, GroupProgress], order: dict[str, list[str]]) -> dict[str, str]:
    """Fill in each group's clients from the first of its brokers that answers; return, per
    online group, the broker to relay running-info calls through."""
    relay: dict[str, str] = {}
    attempt = 0
    pending = {g for g in result if order[g]}
    last_error: dict[str, RocketMQError] = {}
    while pending:
        targets = [(g, order[g][attempt]) for g in sorted(pending) if attempt < len(order[g])]
        if not targets:
            break
        answers = await client.progress.consumer_connections_many([(g, result[g].brokers[b]) for g, b in targets])
        for (group, broker), answer in zip(targets, answers, strict=True):
            progress = result[group]
            if isinstance(answer, ConsumerConnection):
                progress.connection = answer
                progress.online = bool(answer.connections)
                relay[group] = progress.brokers[broker]
                pending.discard(group)
            elif isinstance(answer, ConsumerNotOnline):
                progress.online = False
                pending.discard(group)
            else:
                last_error[group] = answer  # try the group's next broker
        attempt += 1
    for group in pending:
        if group in last_error:
            result[group].problems.append(Problem.of("connection", group, last_error[group]))
    return relay


async def _proxy_connections(
    client, result: dict[str, GroupProgress], ask: ProxyAsk, proxy_deadline: float | None
) -> dict[str, ProxyStatus]:
    """Ask the proxies about the groups the brokers call offline (their clients may be gRPC
    ones) and, after those, about online ones too: a group may have remoting clients on the
    brokers and gRPC clients on a proxy at once (mixed). Groups not asked this poll stay as the
    brokers said (ProxyAsk rotates through them; groups with proxy clients are asked each poll)."""
    offline = sorted(g for g, p in result.items() if p.online is False)
    online = sorted(g for g, p in result.items() if p.online)
    asked = ask.select([*offline, *online])
    statuses, found = await read_proxies(client, asked, ask.addresses, proxy_deadline=proxy_deadline)
    for group in asked:
        connection, errors = found[group]
        progress = result[group]
        if progress.online:
            if connection is not None:  # mixed: the brokers' clients and the proxies' ones
                progress.proxy_clients = [c for c in connection.client_ids if c not in progress.connection.client_ids]
                if progress.proxy_clients:
                    progress.connection = merge([progress.connection, connection])
            continue  # a proxy that cannot be read leaves what the brokers said (online) standing
        if connection is not None:
            progress.connection, progress.online, progress.via_proxy = connection, True, True
        elif errors:
            progress.online = None  # its clients may be on the proxy that did not answer
            progress.problems += [
                Problem("proxy", address, error, "ProxyUnreadable") for address, error in errors.items()
            ]
    return statuses


async def _running_info(client, result: dict[str, GroupProgress], relay: dict[str, str]) -> None:
    targets = [
        (group, client_id, relay[group])
        for group, progress in result.items()
        if progress.online and group in relay
        # a mixed group's gRPC clients have no running info (the broker cannot relay to them)
        for client_id in sorted(set(progress.connection.client_ids) - set(progress.proxy_clients))
    ]
    answers = await client.progress.running_info_many(targets, timeout=RUNNING_INFO_TIMEOUT)
    for (group, client_id, _), answer in zip(targets, answers, strict=True):
        if isinstance(answer, RocketMQError):
            result[group].problems.append(Problem.of("running-info", client_id, answer))
        else:
            result[group].running_info[client_id] = answer


async def _uncommitted(
    client, result: dict[str, GroupProgress], offsets: dict[str, dict], unreadable: dict[str, Problem]
) -> None:
    subscribed = {
        group: sorted(t for t in progress.connection.subscriptions if not t.startswith(RETRY_PREFIX))
        for group, progress in result.items()
        if progress.online and progress.connection
    }
    routes = await client.topology.topic_routes(sorted({t for topics in subscribed.values() for t in topics}))
    for group, topics in subscribed.items():
        progress = result[group]
        for topic in topics:
            route = routes[topic]
            if isinstance(route, TopicNotFound):
                continue
            if isinstance(route, RocketMQError):
                progress.problems.append(Problem.of("route", topic, route))
                continue
            progress.uncommitted += [
                mq
                for mq in route.read_queues()
                if mq not in offsets[group] and mq.broker_name in progress.brokers and mq.broker_name not in unreadable
            ]


async def _bounds(
    client, result: dict[str, GroupProgress], offsets: dict[str, dict], unreadable: dict[str, Problem]
) -> None:
    """Min and max offsets of every queue any group needs: one request per topic and broker."""
    wanted: dict[str, set] = {}
    for group, progress in result.items():
        queues = set(offsets[group]) | set(progress.uncommitted)
        queues |= {mq for info in progress.running_info.values() for mq in info.mq_table}
        wanted[group] = {mq for mq in queues if mq.broker_name in progress.brokers and mq.broker_name not in unreadable}
    pairs = sorted(
        {(mq.topic, mq.broker_name, result[g].brokers[mq.broker_name]) for g, qs in wanted.items() for mq in qs}
    )
    answers = await client.progress.topic_stats_many([(topic, address) for topic, _, address in pairs])
    tables: dict[tuple[str, str], TopicStatsTable | RocketMQError] = {
        (topic, broker): answer for (topic, broker, _), answer in zip(pairs, answers, strict=True)
    }
    for group, queues in wanted.items():
        progress = result[group]
        for topic, broker in sorted({(mq.topic, mq.broker_name) for mq in queues}):
            table = tables[(topic, broker)]
            if isinstance(table, RocketMQError):
                progress.problems.append(Problem.of("topic-stats", f"{topic}@{broker}", table))
            else:
                progress.bounds.update({mq: o for mq, o in table.offsets.items() if mq in queues})


def _holders(running_info: dict[str, ConsumerRunningInfo]) -> dict[MessageQueue, tuple[str, ...]]:
    holders: dict[MessageQueue, list[str]] = {}
    for client_id, info in sorted(running_info.items()):
        for mq, queue_info in info.mq_table.items():
            if not queue_info.dropped:
                holders.setdefault(mq, []).append(client_id)
    return {mq: tuple(ids) for mq, ids in holders.items()}
