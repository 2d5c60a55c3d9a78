"""Finding messages on the brokers, the ways mqadmin does: by id (queryMsgById: an offset id is
read where it points, anything else is a client id looked up in the topic's index,
queryMsgByUniqueKey), by business key (queryMsgByKey), by position (queryMsgByOffset), and the
messages of a topic stored in a time range, a page at a time.

Pure asyncio over the admin client. Each answer says what it could not read (a broker down, an
index answer cut at its maximum): a list that may be incomplete says so."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.message import Message
from ..rocketmq.models import ClusterInfo, MessageQueue
from ..rocketmq.models.topology import Perm
from ..rocketmq.ops.messages import KEY_QUERY_MAX, IndexAnswer, Located


@dataclass
class Found:
    how: str  # what was asked, in words
    messages: list[Located] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why the list may be incomplete
    note: str | None = None  # why nothing was found, when nothing was


def broker_of(info: ClusterInfo, address: str) -> str | None:
    """The broker (name) an address belongs to, master or slave."""
    return next((name for name, b in sorted(info.brokers.items()) if address in b.addrs.values()), None)


async def find_by_id(
    client: AdminClient, msg_id: str, topic: str | None = None, visible: Callable[[str], bool] | None = None
) -> Found:
    """An offset id first (VIEW_MESSAGE_BY_ID at the broker it names), then, with a topic, a
    client id (UNIQ_KEY) in that topic's index: the two look alike (32 or 56 hex characters).

    `visible` (a scoped user's view): an offset id naming a message of a topic it does not
    see is answered exactly as an id that names nothing, so neither the topic nor whether the
    id exists leaks."""
    found = await client.messages.view_offset_id(msg_id, topic=topic)
    if found is not None and (visible is None or visible(found.topic)):
        info = await client.topology.cluster_info(max_age=10.0)
        broker = broker_of(info, found.store_host) or found.store_host
        how = _("offset id %(id)s: commit-log offset %(offset)s on %(broker)s")
        result = Found(how % {"id": msg_id, "offset": found.physical_offset, "broker": broker})
        result.messages.append(Located(broker, found))
        if topic and found.topic != topic:
            wrong = _("the id names a message of %(found)s, not of %(topic)s") % {"found": found.topic, "topic": topic}
            result.problems.append(wrong)
        return result
    if not topic:
        return Found(
            _("id %(id)s") % {"id": msg_id},
            note=_(
                "it is not an offset id of a message in this cluster; a client id (UNIQ_KEY) is found "
                "through its topic's index: give the topic"
            ),
        )
    answer = await client.messages.query_index(topic, msg_id, unique=True)
    how = _("client id (UNIQ_KEY) %(id)s in %(topic)s") % {"id": msg_id, "topic": topic}
    return _from_index(how, answer, _("no message of the topic has this id"))


async def find_by_key(client: AdminClient, topic: str, key: str, begin_ms: int = 0, end_ms: int | None = None) -> Found:
    answer = await client.messages.query_index(topic, key, begin_ms=begin_ms, end_ms=end_ms, max_num=KEY_QUERY_MAX)
    how = _("key %(key)s in %(topic)s") % {"key": key, "topic": topic}
    return _from_index(how, answer, _("no message of the topic has this key in the time range"))


def _from_index(how: str, answer: IndexAnswer, nothing: str) -> Found:
    problems = [unreadable(broker, e) for broker, e in sorted(answer.errors.items())]
    problems += [
        _("%(broker)s answered as many messages as it answers at once: there may be more; narrow the time range")
        % {"broker": broker}
        for broker in answer.capped
    ]
    return Found(how, answer.messages, problems, None if answer.messages else nothing)


async def find_at(client: AdminClient, topic: str, broker: str, queue_id: int, offset: int) -> Found:
    """The message at a queue offset, or why there is none (no such queue, below the queue's
    oldest message, past its newest)."""
    how = _("%(topic)s on %(broker)s, queue %(queue)s, offset %(offset)s") % {
        "topic": topic,
        "broker": broker,
        "queue": queue_id,
        "offset": offset,
    }
    route = await client.topology.topic_route(topic)
    queue = route.queue_data(broker)
    if queue is None:
        where = {"topic": topic, "broker": broker, "brokers": ", ".join(route.read_addrs())}
        return Found(how, note=_("%(topic)s has no queues on %(broker)s (it is on %(brokers)s)") % where)
    if queue_id >= max(queue.read_queue_nums, queue.write_queue_nums):
        where = {"topic": topic, "last": queue.read_queue_nums - 1, "broker": broker}
        return Found(how, note=_("%(topic)s has queues 0 to %(last)s on %(broker)s") % where)
    mq = MessageQueue(topic, broker, queue_id)
    message = await client.messages.read_one(mq, offset)
    if message is not None:
        return Found(how, [Located(broker, message)])
    low, high = await asyncio.gather(client.progress.min_offset(mq), client.progress.max_offset(mq))
    if offset >= high:
        why = _("the queue's next offset is %(next)s: nothing is stored at %(offset)s yet") % {
            "next": high,
            "offset": offset,
        }
    elif offset < low:
        why = _("the queue's oldest message is at %(oldest)s: %(offset)s is gone (retention)") % {
            "oldest": low,
            "offset": offset,
        }
    else:
        why = _("no message is stored there")
    return Found(how, note=why)


def unreadable(where: str, error: Exception) -> str:
    return _("%(where)s could not be read: %(error)s") % {"where": where, "error": f"{type(error).__name__}: {error}"}


@dataclass
class TimePage:
    messages: list[Located]
    total: int  # offsets between each queue's first and last message in the range, summed
    cursor: dict[str, int]  # per queue ("broker#queue"): read from this offset next
    more: bool
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Window:
    mq: MessageQueue
    readable: bool
    start: int
    stop: int

    @property
    def source(self) -> str:
        return f"{self.mq.broker_name}#{self.mq.queue_id}"


async def read_time_page(
    client: AdminClient, topic: str, begin_ms: int, end_ms: int, *, cursor: dict[str, int] | None = None, size: int = 50
) -> TimePage:
    """One page of the topic's messages stored in [begin_ms, end_ms], oldest first across its
    queues. Each queue's window is found by time (SEARCH_OFFSET_BY_TIMESTAMP: the first offset
    stored at or after the begin, and after the end), then read forward from the cursor."""
    windows, problems = await _windows(client, topic, begin_ms, end_ms)
    cursor = cursor or {}
    reads = []
    for w in windows:
        start = max(w.start, cursor.get(w.source, w.start))
        reads.append((w, start, min(w.stop, start + size)))
    chunks = await asyncio.gather(*(_read(client, w, a, b) for w, a, b in reads), return_exceptions=True)
    candidates: list[tuple[int, str, int, Located]] = []
    next_cursor: dict[str, int] = {}
    for (w, start, stop), chunk in zip(reads, chunks, strict=True):
        if isinstance(chunk, RocketMQError):
            problems.append(unreadable(w.source, chunk))
            next_cursor[w.source] = start
            continue
        if isinstance(chunk, BaseException):
            raise chunk
        next_cursor[w.source] = stop
        for m in chunk:
            if begin_ms <= m.store_timestamp <= end_ms:
                candidates.append((m.store_timestamp, w.source, m.queue_offset, Located(w.mq.broker_name, m)))
    candidates.sort(key=lambda c: c[:3])
    for _stored, source, offset, _located in candidates[size:]:  # read, not shown: the next page starts there
        next_cursor[source] = min(next_cursor[source], offset)
    more = any(next_cursor[w.source] < w.stop for w in windows)
    total = sum(w.stop - w.start for w in windows)
    return TimePage([c[3] for c in candidates[:size]], total, next_cursor, more, problems)


async def _windows(client: AdminClient, topic: str, begin_ms: int, end_ms: int) -> tuple[list[_Window], list[str]]:
    route = await client.topology.topic_route(topic)
    readable = {q.broker_name: Perm.readable(q.perm) for q in route.queue_datas}
    queues = [mq for mq in route.read_queues(readable_only=False) if mq.broker_name in route.read_addrs()]
    found = await asyncio.gather(
        *(_bounds(client, mq, begin_ms, end_ms) for mq in queues), return_exceptions=True
    )  # fmt: skip
    windows, problems = [], []
    for mq, bounds in zip(queues, found, strict=True):
        if isinstance(bounds, RocketMQError):
            problems.append(unreadable(f"{mq.broker_name}#{mq.queue_id}", bounds))
        elif isinstance(bounds, BaseException):
            raise bounds
        else:
            windows.append(_Window(mq, readable.get(mq.broker_name, False), *bounds))
    return windows, problems


async def _bounds(client: AdminClient, mq: MessageQueue, begin_ms: int, end_ms: int) -> tuple[int, int]:
    start = await client.actions.search_offset(mq, begin_ms)
    stop = await client.actions.search_offset(mq, end_ms + 1)
    return start, max(start, stop)


async def _read(client: AdminClient, w: _Window, begin: int, end: int) -> list[Message]:
    if begin >= end:
        return []
    if w.readable:
        return await client.messages.pull_range(w.mq, begin, end)
    return await client.messages.read_by_position(w.mq, begin, end)


def row(found: Located) -> dict:
    """What a list shows of a message, and what the API gives: everything but the body."""
    m = found.message
    return {
        "topic": m.topic,
        "broker": found.broker,
        "queue_id": m.queue_id,
        "offset": m.queue_offset,
        "msg_id": m.msg_id,
        "unique_key": m.properties.get("UNIQ_KEY"),
        "offset_msg_id": m.offset_msg_id,
        "tags": m.tags,
        "keys": m.keys,
        "store_ms": m.store_timestamp,
        "born_ms": m.born_timestamp,
        "born_host": m.born_host,
        "store_host": m.store_host,
        "reconsume_times": m.reconsume_times,
        "body_size": len(m.body),
        "stored_size": m.store_size,
    }


def detail(found: Located) -> dict:
    """A message's metadata, all of it (the body apart)."""
    m = found.message
    return {
        **row(found),
        "commit_log_offset": m.physical_offset,
        "sys_flag": m.sys_flag,
        "flag": m.flag,
        "body_crc": m.body_crc,
        "compression": m.compression,
        "stored_body_size": len(m.stored_body),
        "properties": dict(sorted(m.properties.items())),
    }
