"""Reading, for one message, what every group of its topic did with it: the groups the brokers
name (QUERY_TOPIC_CONSUME_BY_WHO on every master of the topic) and those the last poll saw on
the topic; per group its committed offset on the message's queue (QUERY_CONSUMER_OFFSET at the
queue's master), who is connected and what they subscribe to (the broker, then the proxies),
whether it pops the topic (the brokers' request modes), the message's copies in its retry,
delay and dead-letter topics (found in the index by the message's UNIQ_KEY, which every copy
keeps) with the group's offsets on them, and for broadcasting groups each client's own offset.

Every part is read for all groups at once, pipelined. A part that could not be read makes
that group's verdict unknown with why (verdicts.py), never "not consumed"."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from django.utils.translation import gettext as _

from ..rocketmq import AdminClient, ConsumerNotOnline, RocketMQError
from ..rocketmq.codes import dlq_topic, pop_retry_topics, retry_topic
from ..rocketmq.groups import RUNNING_INFO_TIMEOUT
from ..rocketmq.models import ConsumerConnection, MessageQueue, is_system_group
from ..rocketmq.ops.messages import Located
from ..rocketmq.proxies import read_proxies
from .traces import Trace
from .traces import read as read_trace
from .verdicts import Copy, GroupTrack, Hint, Reading, Skip, judge

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # where a retry copy waits out its delay level


@dataclass
class Tracking:
    groups: list[GroupTrack]
    problems: list[str]  # what could not be read for every group (which groups consume, the delays)
    read_at: float
    trace: Trace | None = None  # the clients' own trace of it (traces.py), when a trace topic is named


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def track(
    client: AdminClient,
    found: Located,
    *,
    hints: dict[str, Hint] | None = None,
    proxies: list[str] = (),
    trace_topic: str = "",
    skips: dict[str, Skip] | None = None,
) -> Tracking:
    """`skips`: per group, the console's skip that passed over the message (skips.selectors)."""
    m = found.message
    mq = MessageQueue(m.topic, found.broker, m.queue_id)
    hints = hints or {}
    read_at = time.time()
    problems: list[str] = []
    address = await client.topology.master_addr(found.broker)
    groups = await _groups(client, m.topic, hints, problems)
    skips = skips or {}
    readings = {g: Reading(g, mq, m.queue_offset, m.tags, hint=hints.get(g), skip=skips.get(g)) for g in groups}
    offsets, connections, modes = await asyncio.gather(
        client.progress.consumer_offsets_many([(g, mq, address) for g in groups]),
        client.progress.consumer_connections_many([(g, address) for g in groups]),
        _pop_modes(client, address, found.broker, problems),
    )
    for group, offset, connection in zip(groups, offsets, connections, strict=True):
        r = readings[group]
        if isinstance(offset, RocketMQError):
            r.committed_error = _error(offset)
        else:
            r.committed = offset
        if isinstance(connection, ConsumerConnection):
            r.connection = connection
        elif not isinstance(connection, ConsumerNotOnline):
            r.connection_error = _error(connection)
        r.pop = m.topic in modes.get(group, ())
    await _ask_proxies(client, readings, list(proxies))
    await _copies(client, found, readings, problems)
    await _skip_copies(client, m.store_timestamp, readings)
    await _running_info(client, readings, address)
    trace = await read_trace(client, m, trace_topic) if trace_topic else None
    return Tracking([judge(r) for r in readings.values()], problems, read_at, trace)


async def _groups(client: AdminClient, topic: str, hints: dict[str, Hint], problems: list[str]) -> list[str]:
    route = await client.topology.topic_route(topic)
    masters = sorted(route.master_addrs().items())
    answers = await client.progress.groups_of_topic_many(topic, [address for _broker, address in masters])
    found = set(hints)
    for (broker, _address), answer in zip(masters, answers, strict=True):
        if isinstance(answer, RocketMQError):
            problems.append(
                _("%(broker)s could not say which groups consume %(topic)s: %(error)s")
                % {"broker": broker, "topic": topic, "error": _error(answer)}
            )
        else:
            found.update(answer)
    return sorted(g for g in found if not is_system_group(g))


async def _pop_modes(client: AdminClient, address: str, broker: str, problems: list[str]) -> dict[str, set[str]]:
    try:
        return await client.topology.pop_modes(address)
    except RocketMQError as exc:  # an old broker or an ACL: POP is then known from clients and the last poll
        problems.append(
            _("%(broker)s could not say which groups pop (request modes): %(error)s")
            % {"broker": broker, "error": _error(exc)}
        )
        return {}


async def _ask_proxies(client: AdminClient, readings: dict[str, Reading], proxies: list[str]) -> None:
    """Groups no broker knows a client of may have gRPC clients on a proxy (RocketMQ 5 SDKs)."""
    asked = sorted(g for g, r in readings.items() if r.connection is None and r.connection_error is None)
    if not proxies or not asked:
        return
    _connections, found = await read_proxies(client, asked, proxies)
    for group in asked:
        connection, errors = found[group]
        if connection is not None:
            readings[group].connection, readings[group].via_proxy = connection, True
        elif errors:
            readings[group].connection_error = "; ".join(f"proxy {p}: {e}" for p, e in sorted(errors.items()))


async def _copies(client: AdminClient, found: Located, readings: dict[str, Reading], problems: list[str]) -> None:
    m = found.message
    key = m.properties.get("UNIQ_KEY")
    if not key:
        for r in readings.values():
            r.copies_error = _("the message has no UNIQ_KEY, the id its copies are found by")
        return
    wanted: dict[str, tuple[str, str]] = {}  # topic -> (kind, group)
    for group in readings:
        for topic in (retry_topic(group), *pop_retry_topics(group, m.topic)):
            wanted[topic] = ("retry", group)
        wanted[dlq_topic(group)] = ("dlq", group)
    try:
        existing = set(await client.topology.topic_list())
    except RocketMQError as exc:
        for r in readings.values():
            r.copies_error = _("the name server's topic list could not be read: %(error)s") % {"error": _error(exc)}
        return
    asks = sorted(t for t in wanted if t in existing) + ([SCHEDULE_TOPIC] if SCHEDULE_TOPIC in existing else [])
    await client.topology.topic_routes(asks)  # one batch; each query below finds its route cached
    answers = await asyncio.gather(
        *(client.messages.query_index(t, key, unique=True, begin_ms=m.store_timestamp) for t in asks),
        return_exceptions=True,
    )
    retry_of = {t: g for t, (kind, g) in wanted.items() if kind == "retry"}
    for topic, answer in zip(asks, answers, strict=True):
        group = wanted[topic][1] if topic in wanted else None
        if isinstance(answer, BaseException):
            if not isinstance(answer, RocketMQError):
                raise answer
            unread = _("%(topic)s could not be searched: %(error)s") % {"topic": topic, "error": _error(answer)}
            _copies_unread(readings, group, problems, unread)
            continue
        for broker, error in sorted(answer.errors.items()):
            unread = _("%(topic)s on %(broker)s could not be searched: %(error)s") % {
                "topic": topic,
                "broker": broker,
                "error": _error(error),
            }
            _copies_unread(readings, group, problems, unread)
        for copy in answer.messages:
            c = copy.message
            kind = wanted[topic][0] if group else "scheduled"
            owner = group or retry_of.get(c.properties.get("REAL_TOPIC", ""))
            if owner is not None:
                readings[owner].copies.append(Copy(
                    kind, c.topic, copy.broker, c.queue_id, c.queue_offset, c.store_timestamp, c.reconsume_times,
                    delay_level=c.properties.get("DELAY") if kind == "scheduled" else None,
                ))  # fmt: skip
    await _retry_offsets(client, readings)


async def _skip_copies(client: AdminClient, since_ms: int, readings: dict[str, Reading]) -> None:
    """The copies the console's skips sent to the groups' DLQs, found by the ids they were
    sent with."""
    asked = [r for r in readings.values() if r.skip is not None and r.skip.copy_key]
    if not asked:
        return
    answers = await asyncio.gather(
        *(client.messages.query_index(dlq_topic(r.group), r.skip.copy_key, unique=True, begin_ms=since_ms)
          for r in asked),
        return_exceptions=True,
    )  # fmt: skip
    for r, answer in zip(asked, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, RocketMQError):
                raise answer
            r.skip.copy_error = _error(answer)
            continue
        if answer.messages:
            located = answer.messages[0]
            c = located.message
            r.skip.copy = Copy("dlq", c.topic, located.broker, c.queue_id, c.queue_offset, c.store_timestamp,
                               c.reconsume_times)  # fmt: skip
        elif answer.errors:
            r.skip.copy_error = "; ".join(f"{b}: {_error(e)}" for b, e in sorted(answer.errors.items()))


def _copies_unread(readings: dict[str, Reading], group: str | None, problems: list[str], why: str) -> None:
    if group is None:
        problems.append(why)  # the delay topic: every group's waiting copies
    else:
        readings[group].copies_error = why


async def _retry_offsets(client: AdminClient, readings: dict[str, Reading]) -> None:
    """Each group's committed offset on the queues its retry copies are in."""
    copies = [(r.group, c) for r in readings.values() for c in r.copies if c.kind == "retry"]
    if not copies:
        return
    masters = (await client.topology.cluster_info(max_age=10.0)).masters()
    asked = [(g, c) for g, c in copies if c.broker in masters]
    for _group, c in copies:
        if c.broker not in masters:
            c.committed_error = _("%(broker)s has no live master") % {"broker": c.broker}
    targets = [(g, MessageQueue(c.topic, c.broker, c.queue_id), masters[c.broker]) for g, c in asked]
    for (_group, c), answer in zip(asked, await client.progress.consumer_offsets_many(targets), strict=True):
        if isinstance(answer, RocketMQError):
            c.committed_error = _error(answer)
        else:
            c.committed = answer


async def _running_info(client: AdminClient, readings: dict[str, Reading], address: str) -> None:
    """Broadcasting groups keep their offsets in the clients: ask each one (through the
    message's broker, which every client of the topic heartbeats to)."""
    targets = [
        (r.group, client_id, address)
        for r in readings.values()
        if r.connection and r.connection.message_model == "BROADCASTING" and not r.via_proxy
        for client_id in r.connection.client_ids
    ]
    if not targets:
        return
    answers = await client.progress.running_info_many(targets, timeout=RUNNING_INFO_TIMEOUT)
    for (group, client_id, _address), answer in zip(targets, answers, strict=True):
        readings[group].running[client_id] = _error(answer) if isinstance(answer, RocketMQError) else answer
