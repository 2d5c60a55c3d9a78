"""Lag that respects tag filters: of the messages between a group's committed offset and the
queue's end, those its TAG subscription lets through (apache/rocketmq #5605: a group on tag A of
a topic carrying A and B otherwise sees every B message as lag).

Counted from the consume queue's units (ops/consumequeue.py): each carries its message's tag
hash code, which is all the broker itself compares, so the count is the broker's own; two tags
with one hash code would both count (the broker delivers both, the client drops the stranger).

The units never change once written, so a poll keeps each full block of BLOCK units' codes in
Redis (about 300 bytes: the block's distinct codes, then a character per unit) and reads only the
blocks it lacks; once warm, a queue's newest, still filling block, shared by every group on it.
Units read per poll are bounded (ROCKETMQ_TAGLAG_BUDGET): past the budget a queue's figure is
estimated from the share of matches among the units it could count, and says so.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from ..rocketmq import AdminClient, GroupProgress, RocketMQError
from ..rocketmq.codes import RETRY_PREFIX
from ..rocketmq.models import MessageQueue, SubscriptionData
from ..rocketmq.tags import filter_codes
from .notes import TAG_LAG_ESTIMATED, TAG_LAG_OVER_BUDGET, TAG_LAG_SQL, TAG_LAG_UNREAD

BLOCK = 250  # divides the 300,000 units of a consume-queue file: a block never spans two
CACHE_LIMIT = 100_000  # blocks (about 30 MB, 25 million units); past this the cache starts over


@dataclass(frozen=True)
class TagLag:
    lag: int | None  # the matching messages above the committed offset; None: not counted
    note: str | None = None  # why lag is None, or that it is an estimate


@dataclass
class _Queue:
    mq: MessageQueue
    ranges: list[tuple[int, int]]  # [low, high) per group
    min_offset: int  # the oldest unit still stored
    blocks: dict[int, tuple[int, list[int]]] = field(default_factory=dict)  # read this poll: block -> (first, codes)
    errors: list[str] = field(default_factory=list)


@dataclass
class TagLags:
    queues: dict[tuple[str, MessageQueue], TagLag]
    # per group, per topic it filters: the expression ("TAG: A || B"), and whether it is as last
    # seen (no client online now to say it)
    filters: dict[str, dict[str, str]]
    remembered: set[str]


def subscriptions(progress: GroupProgress, remembered: dict[str, dict]) -> tuple[dict[str, SubscriptionData], bool]:
    """The group's subscriptions: its clients' now, or as last seen when none is online."""
    if progress.connection and progress.connection.subscriptions:
        return progress.connection.subscriptions, False
    seen = remembered.get(progress.group) or {}
    return {t: SubscriptionData(t, s[1], s[0], list(s[2])) for t, s in seen.items()}, bool(seen)


def remember(redis, key: str, groups: list[GroupProgress]) -> None:
    """Keep the subscriptions the online groups' clients say, for when they are offline."""
    said = {
        p.group: json.dumps({t: [s.expression_type, s.sub_string, s.tags] for t, s in p.connection.subscriptions.items()
                             if not t.startswith(RETRY_PREFIX)}, sort_keys=True)
        for p in groups if p.connection and p.connection.subscriptions
    }  # fmt: skip
    if said:
        redis.hset(key, mapping=said)


def recall(redis, key: str, groups: list[GroupProgress]) -> dict[str, dict]:
    offline = [p.group for p in groups if not (p.connection and p.connection.subscriptions)]
    found = dict(zip(offline, redis.hmget(key, offline), strict=True)) if offline else {}
    return {g: json.loads(v) for g, v in found.items() if v}


def subscription_filters(subs: dict[str, SubscriptionData]) -> dict[str, frozenset[int] | str]:
    """Per subscribed topic that filters by tags: its codes; a SQL92 topic: its note. Topics taking
    every message are left out."""
    found: dict[str, frozenset[int] | str] = {}
    for topic, sub in subs.items():
        try:
            codes = filter_codes(sub)
        except ValueError:
            found[topic] = TAG_LAG_SQL
            continue
        if codes is not None:
            found[topic] = codes
    return found


def _cache_field(mq: MessageQueue, block: int) -> str:
    return f"{mq.broker_name}|{mq.topic}|{mq.queue_id}|{block}"


# a block's units as characters, each standing for one of its distinct codes (a block of more
# distinct tags than this keeps its codes as a plain list)
_ALPHABET = "".join(chr(c) for c in range(0x30, 0x7F) if chr(c) not in "|,")


def _decode(raw: bytes) -> list[int]:
    text = raw.decode()
    if text.startswith(","):
        return [int(c) for c in text[1:].split(",")]
    names, _, units = text.partition("|")
    codes = [int(c) for c in names.split(",")]
    return [codes[_ALPHABET.index(ch)] for ch in units]


def _encode(codes: list[int]) -> str:
    distinct = sorted(set(codes))
    if len(distinct) > len(_ALPHABET):
        return "," + ",".join(map(str, codes))
    index = {code: _ALPHABET[i] for i, code in enumerate(distinct)}
    return ",".join(map(str, distinct)) + "|" + "".join(index[c] for c in codes)


async def measure(client: AdminClient, groups: list[GroupProgress], *, redis, cache_key: str, budget: int,
                  addresses: dict[str, str], remembered: dict[str, dict], concurrency: int = 16
                  ) -> TagLags:  # fmt: skip
    """The tag-filtered lag of every queue of the groups that filter by tags, keyed by (group,
    queue); `addresses` are the brokers' master addresses by name, `remembered` the last seen
    subscriptions of groups with no client online (recall)."""
    filters, described, as_seen = {}, {}, set()
    for p in groups:
        subs, old = subscriptions(p, remembered)
        filters[p.group] = subscription_filters(subs)
        described[p.group] = {t: f"{subs[t].expression_type}: {subs[t].sub_string}" for t in filters[p.group]}
        if old and filters[p.group]:
            as_seen.add(p.group)
    queues: dict[MessageQueue, _Queue] = {}
    result: dict[tuple[str, MessageQueue], TagLag] = {}
    for progress in groups:
        for q in progress.queues:
            wanted = filters[progress.group].get(q.topic)
            if q.retry or wanted is None:
                continue
            if isinstance(wanted, str):
                result[(progress.group, q.queue)] = TagLag(None, wanted)
                continue
            low = max(q.consumer_offset, q.min_offset or 0)
            if q.broker_offset <= low:
                result[(progress.group, q.queue)] = TagLag(0)
                continue
            entry = queues.setdefault(q.queue, _Queue(q.queue, [], q.min_offset or 0))
            entry.ranges.append((low, q.broker_offset))

    fields = {mq: [_cache_field(mq, b) for b in _blocks(e.ranges)] for mq, e in queues.items()}
    flat = [f for names in fields.values() for f in names]
    raw = dict(zip(flat, redis.hmget(cache_key, flat), strict=True)) if flat else {}
    cached = {f: _decode(v) for f, v in raw.items() if v is not None}

    # what to read: per queue, the blocks not cached (the newest, filling one never is);
    # queues needing least first, so the budget counts as many queues exactly as it can
    plans = sorted(((mq, _to_read(e.ranges, mq, cached)) for mq, e in queues.items()), key=lambda p: len(p[1]))
    granted, spent = [], 0
    for mq, blocks in plans:
        for block in blocks:
            if spent + BLOCK > budget:
                break
            granted.append((mq, block))
            spent += BLOCK
    limit = asyncio.Semaphore(concurrency)

    async def read(mq: MessageQueue, block: int) -> None:
        entry, high = queues[mq], max(h for _, h in queues[mq].ranges)
        # from the block's start, to cache it whole, unless its start has expired
        start, stop = max(block * BLOCK, entry.min_offset), min((block + 1) * BLOCK, high)
        codes: list[int] = []
        async with limit:
            try:
                while start + len(codes) < stop:
                    got = await client.consume_queues.units(addresses[mq.broker_name], mq, start + len(codes),
                                                            stop - start - len(codes))  # fmt: skip
                    if not got.codes:
                        break
                    codes += got.codes
            except (RocketMQError, KeyError) as exc:
                entry.errors.append(str(exc) or type(exc).__name__)
                return
        if codes:
            entry.blocks[block] = (start, codes)

    await asyncio.gather(*(read(mq, block) for mq, block in granted))
    full = ((mq, b, c) for mq, e in queues.items() for b, (first, c) in e.blocks.items() if len(c) == BLOCK)
    fresh = {_cache_field(mq, b): _encode(c) for mq, b, c in full}
    if fresh:
        if redis.hlen(cache_key) > CACHE_LIMIT:
            redis.delete(cache_key)
        redis.hset(cache_key, mapping=fresh)

    for progress in groups:
        for q in progress.queues:
            wanted = filters[progress.group].get(q.topic)
            if q.retry or wanted is None or isinstance(wanted, str) or (progress.group, q.queue) in result:
                continue
            entry = queues[q.queue]
            low = max(q.consumer_offset, q.min_offset or 0)
            result[(progress.group, q.queue)] = _count(entry, low, q.broker_offset, wanted, cached, budget)
    return TagLags(result, {g: d for g, d in described.items() if d}, as_seen)


def _blocks(ranges: list[tuple[int, int]]) -> list[int]:
    low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
    return list(range(low // BLOCK, (high - 1) // BLOCK + 1))


def _to_read(ranges: list[tuple[int, int]], mq: MessageQueue, cached: dict[str, list[int]]) -> list[int]:
    needed = set()
    for low, high in ranges:
        needed.update(range(low // BLOCK, (high - 1) // BLOCK + 1))
    return sorted(b for b in needed if _cache_field(mq, b) not in cached)


def _count(entry: _Queue, low: int, high: int, wanted: frozenset[int], cached: dict[str, list[int]],
           budget: int) -> TagLag:  # fmt: skip
    matched, counted, uncounted = 0, 0, 0
    for block in range(low // BLOCK, (high - 1) // BLOCK + 1):
        start, stop = max(low, block * BLOCK), min(high, (block + 1) * BLOCK)
        whole = cached.get(_cache_field(entry.mq, block))
        first, codes = (block * BLOCK, whole) if whole is not None else entry.blocks.get(block, (0, []))
        if codes and first <= start and first + len(codes) >= stop:
            part = codes[start - first : stop - first]
            matched += sum(1 for c in part if c in wanted)
            counted += len(part)
        else:
            uncounted += stop - start
    if not uncounted:
        return TagLag(matched)
    if entry.errors:
        return TagLag(None, TAG_LAG_UNREAD % {"error": entry.errors[0]})
    if not counted:
        return TagLag(None, TAG_LAG_OVER_BUDGET % {"budget": budget})
    estimate = matched + round(uncounted * matched / counted)
    return TagLag(estimate, TAG_LAG_ESTIMATED % {"counted": counted, "units": counted + uncounted, "budget": budget})
