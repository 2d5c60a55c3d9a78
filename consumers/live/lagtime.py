"""Lag in seconds per queue, exactly: poll time minus the store time of the first message the
group has not consumed, read from the broker.

The store time of a stored message never changes, so lookups are cached by (broker, topic,
queue, offset) in Redis, and a poll only reads the messages at offsets it has not seen. New
lookups per poll are bounded; a queue left over gets its number on a later poll and says so
meanwhile. Its notes are in English, formats of notes.py (a page shows them translated).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..rocketmq import AdminClient, GroupProgress, RocketMQError
from ..rocketmq.models import MessageQueue
from .notes import LAG_FROM_OLDEST, LAG_MESSAGE_NOT_FOUND, LAG_MESSAGE_UNREAD, LAG_NO_MESSAGE, LAG_OVER_BUDGET

CACHE_LIMIT = 200_000  # entries; past this the cache starts over rather than grow without end


@dataclass(frozen=True)
class LagTime:
    seconds: float | None
    note: str | None = None  # why seconds is None, or what qualifies it


def _key(mq: MessageQueue, offset: int) -> str:
    return f"{mq.broker_name}|{mq.topic}|{mq.queue_id}|{offset}"


async def measure(
    client: AdminClient,
    groups: list[GroupProgress],
    *,
    now_ms: int,
    redis,
    cache_key: str,
    budget: int = 256,
    concurrency: int = 32,
) -> dict[tuple[str, MessageQueue], LagTime]:
    """Lag seconds of every lagging queue of the given groups, keyed by (group, queue)."""
    wanted: dict[str, tuple[MessageQueue, int]] = {}
    for progress in groups:
        for q in progress.queues:
            if q.lag > 0:
                wanted[_key(q.queue, q.consumer_offset)] = (q.queue, q.consumer_offset)
    keys = sorted(wanted)
    cached = dict(zip(keys, redis.hmget(cache_key, keys), strict=True)) if keys else {}
    missing = [k for k in keys if cached[k] is None]
    to_read, skipped = missing[:budget], set(missing[budget:])
    limit = asyncio.Semaphore(concurrency)

    async def read(key: str) -> tuple[str, bytes | None, str | None]:
        mq, offset = wanted[key]
        async with limit:
            try:
                return key, *await _store_time(client, mq, offset)
            except RocketMQError as exc:
                return key, None, LAG_MESSAGE_UNREAD % {"offset": offset, "error": exc}

    found = await asyncio.gather(*(read(k) for k in to_read))
    notes: dict[str, str] = {}
    fresh = {}
    for key, value, note in found:
        if value is not None:
            cached[key] = value
            if b" " not in value:  # measured from the oldest message: that one changes, do not keep it
                fresh[key] = value
        if note:
            notes[key] = note
    if fresh:
        if redis.hlen(cache_key) > CACHE_LIMIT:
            redis.delete(cache_key)
        redis.hset(cache_key, mapping=fresh)
    result = {}
    for progress in groups:
        for q in progress.queues:
            if q.lag <= 0:
                result[(progress.group, q.queue)] = LagTime(0.0)
                continue
            key = _key(q.queue, q.consumer_offset)
            raw = cached.get(key)
            if raw is not None:
                store_ms, _, qualifier = raw.decode().partition(" ")
                result[(progress.group, q.queue)] = LagTime(
                    max(0.0, (now_ms - int(store_ms)) / 1000), qualifier or None
                )
            elif key in skipped:
                result[(progress.group, q.queue)] = LagTime(None, LAG_OVER_BUDGET % {"budget": budget})
            else:
                result[(progress.group, q.queue)] = LagTime(None, notes.get(key, LAG_MESSAGE_NOT_FOUND))
    return result


async def _store_time(client: AdminClient, mq: MessageQueue, offset: int) -> tuple[bytes | None, str | None]:
    """The cache value for the message at `offset`: b"<store ms>" or b"<store ms> <qualifier>"."""
    pulled = await client.messages.pull(mq, offset, max_nums=1)
    qualifier = ""
    if pulled.status == "OFFSET_ILLEGAL" and pulled.next_begin_offset > offset:
        # the consumer offset fell below the oldest stored message: measure from that one
        qualifier = f" {LAG_FROM_OLDEST}"  # after a space, as the cache holds it
        pulled = await client.messages.pull(mq, pulled.next_begin_offset, max_nums=1)
    if pulled.status != "FOUND" or not pulled.messages:
        return None, LAG_NO_MESSAGE % {"offset": offset, "status": pulled.status}
    return f"{pulled.messages[0].store_timestamp}{qualifier}".encode(), None
