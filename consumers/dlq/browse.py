"""Reading a group's dead-letter queue from the broker: its queues and counts, pages of
messages newest first with filters, one message, and a scan for export and redrive.

Pure asyncio over the admin client (no Django): the views and the redrive call these through
`clusters.connect.run_on_cluster`. A DLQ is %DLQ%<group>, normally one queue on each broker
that dead-lettered something; counts are max - min offset per queue, as mqadmin topicStatus.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from django.utils.translation import gettext as _

from ..rocketmq import AdminClient, RocketMQError, TopicNotFound
from ..rocketmq.codes import dlq_topic
from ..rocketmq.message import Message
from ..rocketmq.models import MessageQueue
from ..rocketmq.models.topology import Perm
from ..web.inputs import ascii_int

CHUNK = 32  # messages per pull (the broker's own cap)


@dataclass(frozen=True)
class DlqQueue:
    broker: str
    queue_id: int
    min: int
    max: int
    readable: bool

    @property
    def source(self) -> str:
        return f"{self.broker}#{self.queue_id}"

    @property
    def count(self) -> int:
        return self.max - self.min


async def dlq_queues(client: AdminClient, group: str, *, unreadable: dict | None = None) -> list[DlqQueue]:
    """The DLQ's queues with their bounds; [] when the group never dead-lettered anything.
    With `unreadable` given, a broker that does not answer is put there ({broker: why})
    instead of failing the whole read."""
    topic = dlq_topic(group)
    try:
        route = await client.topology.topic_route(topic, max_age=0)
    except TopicNotFound:
        return []
    masters = route.master_addrs()
    readable = {q.broker_name: Perm.readable(q.perm) for q in route.queue_datas}
    queues = []
    for broker, address in sorted(masters.items()):
        try:
            stats = await client.progress.topic_stats(topic, address)
        except RocketMQError as exc:
            if unreadable is None:
                raise
            unreadable[broker] = f"{type(exc).__name__}: {exc}"
            continue
        for mq, bound in sorted(stats.offsets.items()):
            queues.append(
                DlqQueue(broker, mq.queue_id, bound.min_offset, bound.max_offset, readable.get(broker, False))
            )
    return queues


@dataclass(frozen=True)
class Selection:
    """Which DLQ messages: every field narrows; empty fields select everything."""

    since_ms: int | None = None
    until_ms: int | None = None
    key: str = ""
    tag: str = ""
    msg_id: str = ""
    original_topic: str = ""
    body: str = ""
    ids: frozenset[str] = frozenset()
    job: int | None = None  # dead letters that came back after this redrive job

    @classmethod
    def from_wire(cls, data: dict) -> Selection:
        return cls(**{**data, "ids": frozenset(data.get("ids") or ())})

    def to_wire(self) -> dict:
        return {**self.__dict__, "ids": sorted(self.ids)}

    def matches(self, m: Message) -> bool:
        if self.since_ms is not None and m.store_timestamp < self.since_ms:
            return False
        if self.until_ms is not None and m.store_timestamp > self.until_ms:
            return False
        if self.key and self.key not in m.keys:
            return False
        if self.tag and m.tags != self.tag:
            return False
        if self.msg_id and self.msg_id not in (m.msg_id, original_id(m), m.offset_msg_id, redriven_from(m)):
            return False
        if self.ids and not ({m.msg_id, original_id(m)} & self.ids):
            return False
        if self.job is not None and came_back_after(m) != self.job:
            return False
        if self.original_topic and m.original_topic != self.original_topic:
            return False
        return not self.body or self.body.encode() in m.body

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.to_wire().items() if v not in (None, "", [])]
        return ",".join(parts) or "all"


def original_id(m: Message) -> str:
    return m.properties.get("ORIGIN_MESSAGE_ID", "")


def came_back_after(m: Message) -> int | None:
    """The redrive job whose copy this dead letter is (it failed again and came back)."""
    job = m.properties.get("REDRIVE_JOB", "")
    return ascii_int(job)


def redriven_from(m: Message) -> str:
    """The message id of the dead letter a redriven copy was made from (its id in the DLQ
    before the redrive): how a returned copy is found again by the id the operator knew."""
    return m.properties.get("REDRIVE_FROM_ID", "")


def row(m: Message, broker: str) -> dict:
    """What the DLQ table shows of one message (no body)."""
    return {
        "broker": broker,
        "queue_id": m.queue_id,
        "offset": m.queue_offset,
        "msg_id": m.msg_id,
        "original_msg_id": original_id(m),
        "original_topic": m.original_topic,
        "came_back_after_job": came_back_after(m),
        "redriven_from_id": redriven_from(m) or None,
        # a POP consumer's retry topic it last failed on, when the original topic was read from it
        "pop_retry_topic": m.stored_retry_topic if m.stored_retry_topic not in (None, m.original_topic) else None,
        "tags": m.tags,
        "keys": m.keys,
        "store_ms": m.store_timestamp,
        "reconsume_times": m.reconsume_times,
        "deliveries": m.deliveries,
        "body_size": len(m.body),
    }


def export_record(m: Message, broker: str) -> dict:
    """Everything about one message, the body in base64: one line of a JSON Lines export."""
    return {
        **row(m, broker),
        "topic": m.topic,
        "born_ms": m.born_timestamp,
        "born_host": m.born_host,
        "store_host": m.store_host,
        "offset_msg_id": m.offset_msg_id,
        "compression": m.compression,
        "properties": m.properties,
        "body_base64": base64.b64encode(m.body).decode(),
    }


@dataclass
class Page:
    rows: list[dict]
    cursor: dict[str, int]  # per source queue: read older than this offset next
    more: bool
    scanned: int


async def read_page(
    client: AdminClient,
    group: str,
    selection: Selection,
    *,
    size: int = 50,
    cursor: dict[str, int] | None = None,
    scan_limit: int = 5000,
) -> Page:
    """A page of matching messages, newest first across the DLQ's queues."""
    queues = await dlq_queues(client, group)
    candidates: list[tuple[int, str, Message]] = []
    scanned, more = 0, False
    next_cursor: dict[str, int] = {}
    for q in queues:
        upper = min((cursor or {}).get(q.source, q.max), q.max)
        found: list[Message] = []
        offset = upper
        while offset > q.min and len(found) < size and scanned < scan_limit:
            begin = max(q.min, offset - CHUNK)
            chunk = await read_range(client, group, q, begin, offset)
            scanned += offset - begin
            found += [m for m in sorted(chunk, key=lambda m: -m.queue_offset) if selection.matches(m)]
            offset = begin
        candidates += [(m.store_timestamp, q.source, m) for m in found]
        next_cursor[q.source] = offset
        more = more or offset > q.min
    candidates.sort(key=lambda c: (-c[0], c[1], -c[2].queue_offset))
    taken = candidates[:size]
    for source in {c[1] for c in candidates[size:]}:
        # messages found but not shown stay for the next page: resume just above the oldest shown
        shown = [c[2].queue_offset for c in taken if c[1] == source]
        next_cursor[source] = min(shown) if shown else next_cursor_upper(cursor, queues, source)
        more = True
    return Page([row(m, source.split("#")[0]) for _, source, m in taken], next_cursor, more, scanned)


def next_cursor_upper(cursor: dict[str, int] | None, queues: list[DlqQueue], source: str) -> int:
    q = next(q for q in queues if q.source == source)
    return min((cursor or {}).get(source, q.max), q.max)


async def read_range(client: AdminClient, group: str, q: DlqQueue, begin: int, end: int) -> list[Message]:
    """Messages of one DLQ queue with offsets in [begin, end): pulled, CHUNK at a time with every
    pull pipelined on one connection, or read by position when the DLQ is write-only (made by
    a broker before 4.9.2: the broker refuses pulls but not reads by commit-log offset)."""
    mq = MessageQueue(dlq_topic(group), q.broker, q.queue_id)
    if not q.readable:
        return await client.messages.read_by_position(mq, begin, end)
    chunks = await asyncio.gather(
        *(client.messages.pull_range(mq, start, min(end, start + CHUNK)) for start in range(begin, end, CHUNK))
    )
    return [m for chunk in chunks for m in chunk]


async def scan(
    client: AdminClient,
    group: str,
    selection: Selection,
    queues: list[DlqQueue] | None = None,
    *,
    pulls_at_once: int = 8,
) -> AsyncIterator[tuple[DlqQueue, Message]]:
    """Every matching message, oldest first, queue by queue, `pulls_at_once` pulls' worth at a time."""
    for q in queues if queues is not None else await dlq_queues(client, group):
        offset = q.min
        while offset < q.max:
            stop = min(q.max, offset + CHUNK * pulls_at_once)
            for m in await read_range(client, group, q, offset, stop):
                if selection.matches(m):
                    yield q, m
            offset = stop


@dataclass(frozen=True)
class Counted:
    count: int  # matching dead letters found
    scanned: int  # dead letters read to find them
    unscanned: int  # dead letters not read (over the limit): the count is then "at least"


CameBack = Counted  # a redrive job's copies back in the DLQ, counted


async def count_matching(
    client: AdminClient, group: str, selection: Selection, limit: int, since: dict[str, int] | None = None
) -> Counted:
    """How many dead letters match, reading each queue oldest first from `since` (per source;
    default: its min), up to `limit` dead letters in all. Counting means reading: the broker
    knows sizes, not what a filter selects."""
    count = scanned = unscanned = 0
    for q in await dlq_queues(client, group):
        start = max(q.min, (since or {}).get(q.source, q.min))
        end = min(q.max, start + max(0, limit - scanned))
        unscanned += q.max - end
        scanned += max(0, end - start)
        if end > start:
            window = DlqQueue(q.broker, q.queue_id, start, end, q.readable)
            count += sum([1 async for _ in scan(client, group, selection, [window])])
    return Counted(count, scanned, unscanned)


async def count_came_back(client: AdminClient, group: str, job: int, since: dict[str, int], limit: int) -> Counted:
    """How many copies a redrive job sent came back into the DLQ. They can only arrive after
    the job was planned, so each queue is read from the job's end of selection (`since`) on."""
    return await count_matching(client, group, Selection(job=job), limit, since)


class MessageNotFound(LookupError):
    """The DLQ has no such broker, queue or offset; the message says which."""


async def read_message(client: AdminClient, group: str, broker: str, queue_id: int, offset: int) -> Message:
    """One dead letter by position, checked against the DLQ's queues first: a position outside
    them is "not found", never a request the broker cannot answer."""
    queue = next((q for q in await dlq_queues(client, group) if (q.broker, q.queue_id) == (broker, queue_id)), None)
    if queue is None:
        raise MessageNotFound(
            _("%(topic)s has no queue %(queue)s on broker %(broker)s")
            % {"topic": dlq_topic(group), "queue": queue_id, "broker": broker}
        )
    where = {"offset": offset, "topic": dlq_topic(group), "broker": broker, "queue": queue_id}
    if not queue.min <= offset < queue.max:
        raise MessageNotFound(
            _(
                "no message at offset %(offset)s of %(topic)s on %(broker)s#%(queue)s: "
                "it holds offsets %(min)s to %(max)s"
            )
            % {**where, "min": queue.min, "max": queue.max - 1}
            if queue.count
            else _("%(source)s is empty") % {"source": queue.source}
        )
    found = await read_at(client, group, queue, offset)
    if found is None:
        raise MessageNotFound(_("no message at offset %(offset)s of %(topic)s on %(broker)s#%(queue)s") % where)
    return found


async def read_at(client: AdminClient, group: str, queue: DlqQueue, offset: int) -> Message | None:
    """Pulled, or read by position where the DLQ is write-only (Messages.read_one)."""
    return await client.messages.read_one(MessageQueue(dlq_topic(group), queue.broker, queue.queue_id), offset)


def body_views(m: Message) -> dict:
    """The body as text, pretty JSON when it is JSON, and hex when it is not text."""
    views: dict = {"size": len(m.body), "compression": m.compression}
    try:
        text = m.body.decode("utf-8")
    except UnicodeDecodeError:
        views["hex"] = m.body[:65536].hex(" ")
        return views
    views["text"] = text
    try:
        views["json"] = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        pass
    return views


def store_time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
