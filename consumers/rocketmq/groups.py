"""`read_groups`: each group's position per topic and queue across every master of the
cluster, with who holds each queue (positions.py holds what it gives).

It works in a few pipelined phases over all the groups at once (routes, consume stats and
connections, running info, topic bounds), so thousands of groups cost thousands of requests but
only a handful of round trips. A part that could not be read is listed in the group's
`problems` and its numbers stay None: unknown is not zero.
"""

from __future__ import annotations

import time

from .codes import RETRY_PREFIX, retry_topic
from .errors import ConsumerNotOnline, RocketMQError, TopicNotFound, TransportError
from .models import ConsumerConnection, ConsumerRunningInfo, ConsumeStats, MessageQueue, TopicRoute, TopicStatsTable
from .positions import GroupProgress, Problem, QueueProgress
from .proxies import ProxyAsk, ProxyStatus, merge, read_proxies

# A broker waits up to 10 s for a client to answer a running-info call.
RUNNING_INFO_TIMEOUT = 12.0


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
