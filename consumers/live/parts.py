"""A big cluster's poll shared by several workers.

One process reads about 2,300 groups a second, so a cluster of 50,000 would take longer than
its poll interval. A poll of more than ROCKETMQ_POLL_PART_GROUPS groups is therefore split:
the task that holds the cluster's lock lists the groups (one probe of every broker), cuts the
sorted names into contiguous parts, and sends a `poll_part` task for each part but the first,
which it reads itself. A part is claimed with a heartbeat lock (polllock.PollLock) and read as a
whole poll would read it (positions, DLQ sizes, lag seconds, tag lag, retention), and judged;
its groups' documents go into the poll's staging hash and their history rows back through Redis
(staging.py), with a light form of each document (its summary) for the poll to index and alert
on. The lock holder then reads every part no worker has claimed (the pool is busy: it never waits
for an idle queue), waits for the others until the poll's deadline, and publishes everything as
one poll.

A part that failed, whose worker died (its claim lapsed without a result) or that missed the
deadline leaves its groups as the last poll knew them, marked stale with why: the poll is
degraded for those groups only, never a hole. A part's task that arrives late or twice finds its
part claimed, done or past its deadline, and does nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from django.conf import settings

from ..clusters.connect import run_on_cluster
from ..jobs import collector
from ..models import Cluster
from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import MessageQueue
from ..rocketmq.positions import GroupProgress, Problem
from ..rocketmq.proxies import ProxyStatus
from ..rocketmq.snapshot import Listing, list_cluster, read_listing
from . import building, notes, reading, snapshots, staging
from .config import default_thresholds
from .documents import GroupDocument
from .history_rows import history_tables
from .jsonwire import dumps
from .polllock import PollLock
from .publish import PollReading, build_documents, judge
from .retention import BrokerRetention, RetentionFacts
from .stages import Stages

log = logging.getLogger(__name__)

KEEP_SECONDS = staging.KEEP_SECONDS  # a poll's plan and results stay in Redis this long at most
CLAIM_TTL = 6.0  # a part's claim lapses this long after its worker stopped beating
HISTORY_TABLES = ("queue_offsets", "group_stats")  # what history_rows.history_tables makes


def split(names: list[str], size: int) -> list[list[str]]:
    """`names` in contiguous parts of about `size` (all the same size, give or take one)."""
    count = max(1, math.ceil(len(names) / max(1, size)))
    step, extra = divmod(len(names), count)
    parts, start = [], 0
    for index in range(count):
        end = start + step + (1 if index < extra else 0)
        parts.append(names[start:end])
        start = end
    return parts


@dataclass
class Part:
    """What a worker needs to read one part: its groups, and what the listing said of them."""

    poll_id: str
    index: int
    count: int
    groups: list[str]
    polled_at: float
    deadline_at: float  # wall-clock time
    unreachable: dict[str, str]  # brokers the poll does not read (brokers.reconcile), with why
    configs_read: bool = False
    fifo: list[str] = field(default_factory=list)
    paused: dict[str, list[str]] = field(default_factory=dict)
    pop: dict[str, list[str]] = field(default_factory=dict)
    in_flight: dict[str, int] | None = None
    in_flight_note: str | None = None

    @classmethod
    def of(cls, listing: Listing, groups: list[str], **fields) -> Part:
        chosen = set(groups)
        return cls(
            groups=groups,
            configs_read=listing.configs_read,
            fifo=sorted(chosen & listing.fifo),
            paused={g: b for g, b in listing.paused.items() if g in chosen},
            pop={g: sorted(t) for g, t in listing.pop.items() if g in chosen},
            **fields,
        )

    def flag(self, listing: Listing) -> None:
        listing.configs_read = self.configs_read
        listing.fifo, listing.paused = set(self.fifo), self.paused
        listing.pop = {g: set(t) for g, t in self.pop.items()}


@dataclass
class PartResult:
    """A part's documents and what the whole poll needs of its reading."""

    # judged (health, drain, retention), their samples in the window, staged (staging.py): each
    # in its light form (staging.light: the summary and problems, no queues)
    documents: dict[str, dict]
    safe_from: dict[MessageQueue, int | str] = field(default_factory=dict)
    retention: dict[str, BrokerRetention] = field(default_factory=dict)  # per broker, as this part read it
    proxies: dict[str, ProxyStatus] = field(default_factory=dict)
    proxy_groups: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None  # the part could not be read: its groups carried over
    # the merged result's: the poll's id (its parts' samples are under it in the window), and the
    # groups the parts judged (not those carried over for a part not read: the poll judges them)
    window_id: str | None = None
    judged: set[str] = field(default_factory=set)
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage of the part's work
    history: dict[str, pa.Table] = field(default_factory=dict)  # its groups' rows (beside the JSON: Board)
    staged: staging.Staged | None = None  # the merged result's: the parts' staged groups

    def to_wire(self) -> bytes:
        return dumps({
            "documents": self.documents,
            "safe_from": [[mq.topic, mq.broker_name, mq.queue_id, v] for mq, v in self.safe_from.items()],
            "retention": {b: dataclasses.asdict(r) for b, r in self.retention.items()},
            "proxies": {a: dataclasses.asdict(p) for a, p in self.proxies.items()},
            "proxy_groups": self.proxy_groups,
            "seconds": self.seconds,
            "error": self.error,
            "stages": self.stages,
        })  # fmt: skip

    @classmethod
    def from_wire(cls, raw: str | bytes) -> PartResult:
        data = json.loads(raw)
        return cls(
            documents=data["documents"],
            safe_from={MessageQueue(t, b, q): v for t, b, q, v in data["safe_from"]},
            retention={
                b: BrokerRetention(**{**r, "delete_hours": tuple(r["delete_hours"])})
                for b, r in data["retention"].items()
            },  # fmt: skip
            proxies={a: ProxyStatus(**p) for a, p in data["proxies"].items()},
            proxy_groups=data["proxy_groups"],
            seconds=data["seconds"],
            error=data["error"],
            stages=data.get("stages") or {},
        )


class Board:
    """A split poll's parts in Redis: plans, claims, results, and a list of the parts done."""

    def __init__(self, redis, cluster_id: int, poll_id: str):
        self.redis, self.cluster_id, self.poll_id = redis, cluster_id, poll_id

    def key(self, name: str) -> str:
        return snapshots.key(self.cluster_id, f"part:{self.poll_id}:{name}")

    def post(self, parts: list[Part]) -> None:
        pipe = self.redis.pipeline()
        for part in parts:
            pipe.set(self.key(f"plan:{part.index}"), json.dumps(dataclasses.asdict(part)), ex=KEEP_SECONDS)
        pipe.execute()

    def plan(self, index: int) -> Part | None:
        raw = self.redis.get(self.key(f"plan:{index}"))
        return Part(**json.loads(raw)) if raw else None

    def claim(self, index: int) -> PollLock | None:
        """The part's claim, or None when a worker has or had it: a part is read once. The claim
        is taken before the part is marked started, so a started part without a claim is lost."""
        lock = PollLock(self.redis, self.key(f"claim:{index}"), ttl=CLAIM_TTL)
        if not lock.acquire():
            return None
        if not self.redis.set(self.key(f"started:{index}"), time.time(), nx=True, ex=KEEP_SECONDS):
            lock.release()
            return None
        return lock

    def finish(self, index: int, result: PartResult) -> None:
        pipe = self.redis.pipeline()
        pipe.set(self.key(f"result:{index}"), result.to_wire(), ex=KEEP_SECONDS)
        for name, table in result.history.items():
            pipe.set(self.key(f"history:{index}:{name}"), staging.table_bytes(table), ex=KEEP_SECONDS)
        pipe.rpush(self.key("done"), index)
        pipe.expire(self.key("done"), KEEP_SECONDS)
        pipe.execute()

    def next_done(self, timeout: float) -> int | None:
        found = self.redis.blpop([self.key("done")], timeout=max(0.01, timeout))
        return int(found[1]) if found else None

    def result(self, index: int) -> PartResult | None:
        """The part's result, taken: removed from Redis as it is read. At 50,000 groups the four
        parts' results and history tables were about 55 MB, held until the poll ended, beside the
        staged documents at Redis's highest."""
        names = list(HISTORY_TABLES)
        pipe = self.redis.pipeline()
        pipe.get(self.key(f"result:{index}"))
        pipe.mget([self.key(f"history:{index}:{name}") for name in names])
        self._drop(pipe, index)
        raw, tables, *_ = pipe.execute()
        if not raw:
            return None
        result = PartResult.from_wire(raw)
        result.history = {name: staging.table_from(t) for name, t in zip(names, tables, strict=True) if t}
        return result

    def taken(self, index: int) -> None:
        """A part this process ran and holds: its copy on the board is not needed."""
        pipe = self.redis.pipeline()
        self._drop(pipe, index)
        pipe.execute()

    def _drop(self, pipe, index: int) -> None:
        pipe.delete(self.key(f"result:{index}"), *(self.key(f"history:{index}:{name}") for name in HISTORY_TABLES))

    def started(self, index: int) -> bool:
        return bool(self.redis.exists(self.key(f"started:{index}")))

    def lost(self, index: int) -> bool:
        """Claimed once, no claim now and no result: its worker died."""
        return self.started(index) and not self.redis.exists(self.key(f"claim:{index}"), self.key(f"result:{index}"))

    def clear(self, count: int) -> None:
        names = ["done"] + [f"{kind}:{i}" for i in range(count) for kind in ("plan", "started", "result")]
        names += [f"history:{i}:{name}" for i in range(count) for name in HISTORY_TABLES]
        self.redis.delete(*(self.key(n) for n in names))


def read_in_parts(
    cluster: Cluster,
    listing: Listing,
    *,
    redis,
    polled_at: float,
    deadline_at: float,
    unreachable: dict[str, str],
    in_flight: tuple[dict[str, int] | None, str | None],
    send: Callable[[int, str, int, float], None],
) -> tuple[dict[str, GroupDocument], PartResult]:
    """Every group's document, read in parts by this process and the workers `send` reaches;
    and what the parts read beside them, merged."""
    poll_id = uuid.uuid4().hex[:12]
    board = Board(redis, cluster.pk, poll_id)
    ranges = split(listing.names, settings.ROCKETMQ_POLL_PART_GROUPS)
    parts = [
        Part.of(listing, names, poll_id=poll_id, index=i, count=len(ranges), polled_at=polled_at,
                deadline_at=deadline_at, unreachable=unreachable, in_flight=_only(in_flight[0], names),
                in_flight_note=in_flight[1])
        for i, names in enumerate(ranges)
    ]  # fmt: skip
    board.post(parts)
    for part in parts[1:]:
        send(cluster.pk, poll_id, part.index, deadline_at)
    results: dict[int, PartResult] = {}
    try:
        while len(results) < len(parts) and time.time() < deadline_at:
            # read here what no worker has taken (the first part always), then wait for a result
            for part in parts:
                if part.index not in results and not board.started(part.index):
                    ran = run_claimed(cluster, part, board, redis)
                    if ran is not None:
                        results[part.index] = ran
                        board.taken(part.index)
            index = board.next_done(min(1.0, deadline_at - time.time()))
            if index is not None and index not in results:
                results[index] = board.result(index) or _missing(parts[index], notes.PART_EXPIRED)
            for part in parts:
                if part.index not in results and board.lost(part.index):
                    results[part.index] = _missing(part, notes.PART_LOST)
    finally:
        staging.close(redis, cluster.pk, poll_id)  # a part still running stages nothing now
        board.clear(len(parts))
    for part in parts:
        if part.index not in results:
            results[part.index] = _missing(part, notes.PART_LATE)
    return _merge(cluster, parts, results, redis)


def run_claimed(cluster: Cluster, part: Part, board: Board, redis, *, post: bool = False) -> PartResult | None:
    """Read the part if it can be claimed; None when another worker has or had it. With `post`
    the result goes to the board before the claim is released (never a moment without both)."""
    lock = board.claim(part.index)
    if lock is None:
        return None
    try:
        result = run_part(cluster, part, redis)
        if post:
            board.finish(part.index, result)
        return result
    finally:
        lock.release()


def run_posted(cluster: Cluster, redis, poll_id: str, index: int) -> str:
    """A worker's part of a split poll (the poll_part task): read and posted, or why not."""
    board = Board(redis, cluster.pk, poll_id)
    part = board.plan(index)
    if part is None or time.time() >= part.deadline_at:
        return "expired"
    with collector.held_off():
        return "read" if run_claimed(cluster, part, board, redis, post=True) is not None else "taken"


def run_part(cluster: Cluster, part: Part, redis) -> PartResult:
    started = time.monotonic()
    try:
        seconds = part.deadline_at - time.time()
        if seconds <= 0:
            raise TimeoutError("the poll's deadline had passed")
        found, asked, cursor = run_on_cluster(cluster, lambda client: read_part(client, cluster, part, redis),
                                              seconds=seconds)  # fmt: skip
    except (RocketMQError, TimeoutError, OSError) as exc:
        log.warning("part %d of %d of the poll of %s failed: %s", part.index + 1, part.count, cluster.name, exc)
        result = _missing(part, f"{type(exc).__name__}: {exc}")
        result.seconds = time.monotonic() - started
        return result
    if cursor is not None:
        reading.remember_cursor(redis, cluster, cursor, part=part.index)
    stages = found.stages
    with stages.timing("documents"):
        documents = build_documents(found, snapshots.LazyDetails(redis, cluster.pk), part.unreachable)
    with stages.timing("health"):
        samples = judge_part(cluster, part, documents, found.retention, redis)
    with stages.timing("history rows"):
        history = history_tables(documents.values())
    with stages.timing("staged"):
        if not staging.stage_open(redis, cluster.pk, part.poll_id, documents, samples):
            return _missing(part, notes.PART_LATE)  # the poll went on without this part
    return PartResult(
        documents={g: staging.light(d) for g, d in documents.items()},
        history=history,
        safe_from=found.retention.safe_from if found.retention else {},
        retention=found.retention.brokers if found.retention else {},
        proxies=found.snapshot.proxies,
        proxy_groups=asked,
        seconds=time.monotonic() - started,
        stages=dict(stages.seconds),
    )


def judge_part(cluster: Cluster, part: Part, documents: dict[str, GroupDocument], retention, redis) -> dict:
    """The part's groups judged here, on their own samples in the window (the lock holder judges
    none of them again); this poll's samples, which are staged with the documents."""
    samples = {group: building.sample(doc, part.polled_at) for group, doc in documents.items()}
    overrides = {o.group: o.as_overrides() for o in cluster.health_overrides.all()}
    judge(cluster, documents, samples, default_thresholds(), overrides, redis, part.polled_at, retention, keep=False)
    return samples


async def read_part(
    client: AdminClient, cluster: Cluster, part: Part, redis
) -> tuple[PollReading, list[str], int | None]:
    """The part's groups read as a whole poll reads its own; the brokers probed again (two
    small requests each), which gives this worker their addresses and runtime figures."""
    stages = Stages()
    share = 1 / part.count
    ask = reading.proxy_ask(cluster, redis, part=part.index, share=share)
    with stages.timing("brokers read"):
        listing = await list_cluster(client, groups=part.groups, broker_deadline=settings.ROCKETMQ_BROKER_DEADLINE)
        part.flag(listing)
        snapshot = await read_listing(client, listing, ask, broker_deadline=settings.ROCKETMQ_BROKER_DEADLINE)
    found, asked = await reading.read_rest(client, cluster, snapshot, redis, part.polled_at, stages=stages, ask=ask,
                                           share=share)  # fmt: skip
    found.in_flight, found.in_flight_note = part.in_flight, part.in_flight_note
    return found, asked, ask.next_cursor if ask.addresses else None


def _missing(part: Part, why: str) -> PartResult:
    """A part not read: the poll carries its groups over (_merge)."""
    why = notes.PART_NOT_READ % {"part": part.index + 1, "parts": part.count, "why": why}
    return PartResult(documents={}, error=why)


def _merge(cluster: Cluster, parts: list[Part], results: dict[int, PartResult], redis) -> tuple[dict, PartResult]:
    documents: dict[str, GroupDocument] = {}
    merged = PartResult(documents={}, window_id=parts[0].poll_id)
    merged.staged = staging.Staged(staging.key(cluster.pk, parts[0].poll_id))
    previous = snapshots.LazyDetails(redis, cluster.pk)
    for part in parts:
        result = results[part.index]
        documents.update((g, GroupDocument.from_wire(light)) for g, light in result.documents.items())
        merged.judged.update(result.documents)
        merged.staged.groups.update(result.documents)
        merged.staged.add_history(result.history)
        merged.safe_from.update(result.safe_from)
        for broker, facts in result.retention.items():
            merged.retention.setdefault(broker, facts)
        merged.proxy_groups += result.proxy_groups
        merged.seconds = max(merged.seconds, result.seconds)
        for stage, seconds in result.stages.items():  # summed over the parts: work, not wall time
            merged.stages[stage] = round(merged.stages.get(stage, 0.0) + seconds, 3)
        for address, status in result.proxies.items():
            held = merged.proxies.setdefault(address, ProxyStatus(address))
            held.error = held.error or status.error
            held.groups += status.groups
            held.group_names += status.group_names
        if result.error:
            # its groups as the last poll knew them, stale with why (the previous documents: one
            # read each, for these groups only)
            merged.error = "; ".join(filter(None, [merged.error, result.error]))
            for group in part.groups:
                progress = GroupProgress(group=group, fetched_at=part.polled_at)
                progress.problems.append(Problem("group", group, result.error, "PollPartNotRead"))
                documents[group] = building.build_document(progress, lag_times={}, dlq_count=None,
                                                           previous=previous.loader(group))  # fmt: skip
    return documents, merged


def _only(values: dict[str, int] | None, groups: list[str]) -> dict[str, int] | None:
    if values is None:
        return None
    return {g: values[g] for g in groups if g in values}


def retention_of(merged: PartResult) -> RetentionFacts:
    """The retention facts of the whole poll, for judging each group's risk."""
    return RetentionFacts(brokers=dict(merged.retention), safe_from=dict(merged.safe_from))
