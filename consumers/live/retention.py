"""Retention risk: which lagging queues will lose messages to the broker's file retention before
their group reaches them, and about how many (apache/rocketmq-dashboard #4439 asks the same).

A broker deletes whole commit-log files, never the one it is writing: a file whose last write is
older than `fileReservedTime` hours goes at the next hour named in `deleteWhen` (also when the
disk is nearly full, or by hand: neither is foreseeable). A message is therefore lost no earlier
than its store time plus the reserved time, and never while it sits in the current file.

What a poll reads (`read`): each broker's reserved time, deletion hours and the start of its
current commit-log file; for each queue with a message old enough to be at risk within the
horizon, the first queue offset inside the current file (a binary search over the consume
queue's commit-log positions, kept in Redis until the broker starts a new file). What a poll
judges (`judge`, no I/O): at each deletion time within the horizon, the messages stored before
it minus the reserved time (store times taken as even between the committed offset's and now),
below the current file, that the group will not have consumed by then at its forecast rate.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats
from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import MessageQueue

RISK_ONE = gettext_noop(
    "%(queue)s will lose about %(count)s messages to retention in %(hours)s h at the current rate (files are "
    "kept %(reserved)s h and deleted at %(when)s)"
)
RISK_MORE = gettext_noop(
    "%(queues)s queues will lose about %(count)s messages to retention, the first (%(queue)s) in %(hours)s h at "
    "the current rate (files are kept %(reserved)s h and deleted at %(when)s)"
)
CONFIG_UNREAD = gettext_noop("retention unknown: the broker's config could not be read (%(error)s)")
POSITION_UNREAD = gettext_noop("retention unknown: the commit-log positions could not be read (%(error)s)")
register_formats(RISK_ONE, RISK_MORE, CONFIG_UNREAD, POSITION_UNREAD)


@dataclass(frozen=True)
class BrokerRetention:
    reserved_hours: float | None = None
    delete_hours: tuple[int, ...] = ()
    current_file_start: int | None = None
    error: str | None = None  # why the above are unknown

    @property
    def when(self) -> str:
        return ", ".join(f"{h:02d}:00" for h in self.delete_hours) or "?"


@dataclass
class RetentionFacts:
    brokers: dict[str, BrokerRetention] = field(default_factory=dict)
    # per queue read: the first offset in the broker's current commit-log file (kept whatever
    # its age), or why it could not be read
    safe_from: dict[MessageQueue, int | str] = field(default_factory=dict)


def delete_hours(text: str) -> tuple[int, ...]:
    """`deleteWhen`: hours of the day separated by ";" ("04", "01;04")."""
    hours = set()
    for part in (text or "").split(";"):
        part = part.strip()
        if part.isdigit() and 0 <= int(part) <= 23:
            hours.add(int(part))
    return tuple(sorted(hours))


def _broker(config: dict[str, str], runtime) -> BrokerRetention:
    reserved = config.get("fileReservedTime")
    size = config.get("mappedFileSizeCommitLog")
    top = runtime.table.get("commitLogMaxOffset") if runtime else None
    if not (reserved and size and top) or not all(v.lstrip("-").isdigit() for v in (reserved, size, top)):
        missing = "fileReservedTime, mappedFileSizeCommitLog or commitLogMaxOffset"
        return BrokerRetention(error=f"{missing} missing or not a number")
    current = int(top) // int(size) * int(size) if int(size) > 0 else None
    return BrokerRetention(float(reserved), delete_hours(config.get("deleteWhen", "")), current)


async def read(client: AdminClient, snapshot, lag_times: dict, *, now: float, redis, cache_key: str,
               horizon: float) -> RetentionFacts:  # fmt: skip
    facts = RetentionFacts()
    readable = {n: b for n, b in snapshot.brokers.items() if not b.error}

    async def config(name: str, status) -> None:
        try:
            facts.brokers[name] = _broker(await client.topology.broker_config(status.address), status.runtime)
        except RocketMQError as exc:
            facts.brokers[name] = BrokerRetention(error=str(exc) or type(exc).__name__)

    await asyncio.gather(*(config(n, b) for n, b in readable.items()))
    # the queues with a message stored long enough ago to be deleted within the horizon
    wanted: dict[MessageQueue, tuple[int, int]] = {}
    for progress in snapshot.groups.values():
        for q in progress.queues:
            broker = facts.brokers.get(q.broker_name)
            measured = lag_times.get((progress.group, q.queue))
            if q.retry or q.lag <= 0 or broker is None or broker.error or measured is None or measured.seconds is None:
                continue
            if measured.seconds + horizon >= broker.reserved_hours * 3600:
                wanted[q.queue] = (q.min_offset or 0, q.broker_offset)
    fields = [_field(mq, facts.brokers[mq.broker_name]) for mq in wanted]
    cached = dict(zip(fields, redis.hmget(cache_key, fields), strict=True)) if fields else {}
    limit = asyncio.Semaphore(16)

    async def locate(mq: MessageQueue, low: int, high: int) -> None:
        key = _field(mq, facts.brokers[mq.broker_name])
        if cached.get(key) is not None:
            facts.safe_from[mq] = int(cached[key])
            return
        async with limit:
            try:
                found = await _first_in_file(client, readable[mq.broker_name].address, mq, low, high,
                                             facts.brokers[mq.broker_name].current_file_start)  # fmt: skip
            except RocketMQError as exc:
                facts.safe_from[mq] = POSITION_UNREAD % {"error": str(exc) or type(exc).__name__}
                return
        facts.safe_from[mq] = found
        redis.hset(cache_key, key, found)

    await asyncio.gather(*(locate(mq, low, high) for mq, (low, high) in wanted.items()))
    return facts


def _field(mq: MessageQueue, broker: BrokerRetention) -> str:
    """Kept until the broker starts a new commit-log file (the key changes with it)."""
    return f"{mq.broker_name}|{mq.topic}|{mq.queue_id}|{broker.current_file_start}"


async def _first_in_file(client: AdminClient, address: str, mq: MessageQueue, low: int, high: int, start: int) -> int:
    """The first queue offset in [low, high) whose message lies at or after commit-log position
    `start`; `high` when none does. Positions grow with offsets: a binary search."""
    while low < high:
        middle = (low + high) // 2
        got = await client.consume_queues.units(address, mq, middle, 1)
        if not got.positions:
            raise RocketMQError(f"no consume-queue unit at offset {middle}")
        if got.positions[0] >= start:
            high = middle
        else:
            low = middle + 1
    return low


def deletion_times(now: float, hours: tuple[int, ...], horizon: float) -> list[float]:
    """When the broker may next delete expired files: the starts of its deletion hours within
    the horizon (now, if this is one), in the console's time zone (the broker's own is not
    reported; run both in one)."""
    if not hours:
        return []
    local = timezone.localtime(dt.datetime.fromtimestamp(now, tz=dt.UTC))
    top = local.replace(minute=0, second=0, microsecond=0)
    found = [now] if local.hour in hours else []
    step = 1
    while (top + dt.timedelta(hours=step)).timestamp() <= now + horizon:
        at = top + dt.timedelta(hours=step)
        if timezone.localtime(at).hour in hours:
            found.append(at.timestamp())
        step += 1
    return found


@dataclass(frozen=True)
class QueueRisk:
    queue: str
    lost: int
    in_seconds: float


def queue_risk(q, broker: BrokerRetention, safe_from: int, rate: float, now: float, horizon: float) -> QueueRisk | None:
    """The messages of queue row `q` (a document's wire form) lost before the group reads them,
    at its consume `rate`: the worst over the deletion times, and when the first loss comes."""
    stored = now - q["lag_seconds"]  # the oldest unconsumed message's store time
    reserved = broker.reserved_hours * 3600
    worst, first = 0.0, None
    for at in deletion_times(now, broker.delete_hours, horizon):
        expired_before = at - reserved
        if expired_before <= stored:
            continue
        share = 1.0 if now <= stored else min(1.0, (expired_before - stored) / (now - stored))
        boundary = min(q["consumer"] + share * q["lag"], safe_from)
        lost = boundary - (q["consumer"] + rate * (at - now))
        if lost >= 1:
            worst, first = max(worst, lost), first if first is not None else at
    return None if first is None else QueueRisk(q.get("label") or _label(q), round(worst), first - now)


def _label(q: dict) -> str:
    return f"{q['topic']}@{q['broker']}#{q['queue_id']}"


def judge(doc, facts: RetentionFacts | None, now: float, horizon: float) -> tuple[dict | None, str | None]:
    """The group's retention figure (documents: `retention`) and, when a queue is at risk, the
    health finding's evidence."""
    if facts is None or doc.stale:
        return None, None
    rates = {d["queue"]: d.get("consume_rate") for d in doc.drain_queues}
    risks, unknown = [], None
    for q in doc.queues:
        if q.retry or not q.lag or q.stale_reason or q.consumer is None:
            continue
        broker = facts.brokers.get(q.broker)
        if broker is None:
            continue
        if broker.error:
            unknown = unknown or CONFIG_UNREAD % {"error": broker.error}
            continue
        mq = MessageQueue(q.topic, q.broker, q.queue_id)
        safe = facts.safe_from.get(mq)
        if safe is None:
            continue  # nothing old enough to go within the horizon
        if isinstance(safe, str):
            unknown = unknown or safe
            continue
        rate = rates.get(q.label) or 0.0  # no forecast (too few polls, a stopped group): not consuming
        row = {**q.__dict__, "label": q.label}
        risk = queue_risk(row, broker, safe, rate, now, horizon) if q.lag_seconds is not None else None
        if risk:
            risks.append((risk, broker))
    if not risks:
        state = "UNKNOWN" if unknown else "SAFE"
        return {"state": state, "reason": unknown, "queues": [], "horizon_hours": horizon / 3600}, None
    risks.sort(key=lambda r: (r[0].in_seconds, -r[0].lost))
    (first, broker), total = risks[0], sum(r.lost for r, _ in risks)
    params = {"queue": first.queue, "count": total, "hours": f"{first.in_seconds / 3600:.1f}",
              "reserved": f"{broker.reserved_hours:g}", "when": broker.when}  # fmt: skip
    evidence = RISK_ONE % params if len(risks) == 1 else RISK_MORE % {**params, "queues": len(risks)}
    queues = [{"queue": r.queue, "lost": r.lost, "in_seconds": round(r.in_seconds)} for r, _ in risks]
    return {"state": "AT_RISK", "reason": unknown, "queues": queues, "horizon_hours": horizon / 3600}, evidence
