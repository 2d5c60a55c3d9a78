"""Running a redrive job: read the DLQ window by window, send each message once at the job's
rate, and survive a worker that dies (planning and the controls are in `redrive.py`).

Exactly once, by design:
- The job's selection is fixed when it is planned: per source queue, the offsets [min, max)
  of that moment (`bounds`); later dead letters are not part of it.
- A worker claims the job with a conditional UPDATE (queued -> running with its own token),
  so a second delivery or a second worker does nothing.
- Per source queue the checkpoint is {"next": first offset not yet recorded, "inflight": end
  of what may have been sent}. Before a window is read and sent, "inflight" moves to its end
  (a committed write). After it is sent, one transaction records one RedrivenMessage row per
  message sent, moves "next" to its end and counts. Messages below "next" are recorded; those
  in [next, inflight) may have gone out without a record.
- Up to three windows are unrecorded at once: the next ones are read and sent on the
  session's event-loop thread while this thread records the oldest (the database writes would
  otherwise leave the wire idle; overlapping them is what makes an unthrottled redrive run
  near the broker's limit). "inflight" covers them all. A slow job keeps one window out, so
  pause and cancel still act within one window's time.
- Each copy carries a UNIQ_KEY derived from (job, source queue, offset): the same message of
  the same job always has the same key. A worker that takes over a dead run re-reads
  [next, inflight) and, for each message without a RedrivenMessage row, asks the target topic
  for that key (the broker's index of UNIQ_KEY) before sending: found means it was sent before
  the crash, and it is recorded instead of sent again.
- A task that reaches its soft time limit hands the job on to a new task (queued again from
  its checkpoint), so a redrive longer than REDRIVE_TIME_LIMIT continues instead of being
  killed mid-window at the hard limit.
Pause and cancel act between windows, after the window in flight is recorded: what was moved
stays moved and is counted exactly.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import datetime as dt
import hashlib
import logging
import time
from dataclasses import dataclass

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from .. import audit
from ..clusters.connect import ClusterSession, cluster_session
from ..jobs import claims
from ..rocketmq import AdminClient, BrokerBusy, RocketMQError
from ..rocketmq.codes import retry_topic
from ..rocketmq.message import Message
from ..rocketmq.models import Outgoing
from .browse import CHUNK, DlqQueue, Selection, dlq_queues, scan
from .ending import despite_the_soft_limit, fail, finish, hand_on
from .models import RedriveJob, RedrivenMessage
from .targets import TargetRefused, check_group_target

log = logging.getLogger(__name__)

WINDOW = 1024  # messages per window: one checkpoint, one transaction
IN_FLIGHT = 3  # at most, windows on the wire while the oldest is recorded
# a broker in flow control answers SYSTEM_BUSY without storing the message: wait and send again
BUSY_RETRIES, BUSY_BACKOFF = 4, 0.2
# properties the broker sets on a stored message: a new send gets its own
BROKER_PROPERTIES = {"UNIQ_KEY", "MIN_OFFSET", "MAX_OFFSET", "REAL_TOPIC", "REAL_QID", "WAIT", "CLUSTER", "MSG_REGION",
                     "TRACE_ON", "DELAY", "CONSUME_START_TIME", "__SHARDINGKEY"}  # fmt: skip


class WindowFailed(RocketMQError):
    """Reading the DLQ failed part way through a window (what was sent is recorded first)."""


def copy_key(job_id: int, source: str, offset: int) -> str:
    return hashlib.md5(f"redrive/{job_id}/{source}/{offset}".encode(), usedforsecurity=False).hexdigest().upper()


def run_job(job_id: int) -> RedriveJob | None:
    """Run (or take over) a job until it is done, paused or cancelled; None when another has it."""
    claimed = claims.claim(RedriveJob, job_id, ready={RedriveJob.State.QUEUED}, running=RedriveJob.State.RUNNING)
    if claimed is None:
        return None
    token = claimed.token
    job = RedriveJob.objects.select_related("cluster").get(pk=job_id)
    audit.record("redrive-run", username="system", cluster=job.cluster.name, group=job.group,
                 details={"job": job.pk, "checkpoints": job.checkpoints, "taken_over": claimed.taken_over})  # fmt: skip
    pacer = Pacer(job.rate)
    try:
        # one client for the whole run: connections and routes are not rebuilt per window; a
        # heartbeat from a thread too, as a slow window may last longer than the take-over's wait
        with claims.beating(RedriveJob, job.pk, token), cluster_session(job.cluster, mutation=True) as session:
            if job.target == RedriveJob.Target.GROUP:
                # again at every start: an orderly consumer may have come online since planning
                session.run(lambda c: check_group_target(c, job.group, job.cluster.proxy_list), seconds=60)
            _refuse_blind_take_over(job, session)  # after a dead worker, or a hand-on at the time limit
            # a write-only DLQ is read by position; one made readable meanwhile is pulled
            # (a broker not answering now only matters if the job has queues there: reading them fails)
            queues = session.run(lambda c: dlq_queues(c, job.group, unreadable={}), seconds=60)
            readable = {q.source: q.readable for q in queues}
            for source, end in sorted(job.bounds.items()):
                if not _drain(session, job, token, source, end, pacer, readable.get(source, True)):
                    return _let_go(job, token)  # paused, cancelled or taken over
    except SoftTimeLimitExceeded:
        return hand_on(job, token)
    except TargetRefused as exc:
        despite_the_soft_limit(fail, job, token, str(exc))
        return RedriveJob.objects.get(pk=job.pk)
    except RocketMQError as exc:
        despite_the_soft_limit(fail, job, token, f"{type(exc).__name__}: {exc}")
        return RedriveJob.objects.get(pk=job.pk)
    return despite_the_soft_limit(finish, job, token)


def _let_go(job: RedriveJob, token: str) -> RedriveJob:
    """After a pause or a cancel, once the windows in flight are recorded: the job is no longer
    this worker's ("pausing" becomes "paused" on its page). A take-over's token is left alone."""
    RedriveJob.objects.filter(pk=job.pk, run_token=token).exclude(state=RedriveJob.State.RUNNING).update(run_token="")
    return RedriveJob.objects.get(pk=job.pk)


def _refuse_blind_take_over(job: RedriveJob, session: ClusterSession) -> None:
    """A take-over looks on the target for what the dead worker may have sent: with a known
    broker missing from the name server it cannot ask that broker, so it does not guess."""
    from ..models import KnownBroker

    if not any(p.get("inflight", p["next"]) > p["next"] for p in job.checkpoints.values()):
        return  # nothing may have gone out unrecorded
    listed = session.run(lambda c: c.topology.cluster_info(), seconds=30).masters()
    known = KnownBroker.objects.filter(cluster=job.cluster).exclude(name__in=listed)
    missing = sorted(known.values_list("name", flat=True))
    if missing:
        raise RocketMQError(
            f"taking over needs to ask every broker whether the dead worker's last sends are stored; "
            f"{', '.join(missing)} is missing from the name server, so nothing was sent again"
        )


class Pacer:
    """The job's rate as a ceiling: each batch (a twentieth of a second's worth; the whole
    window when unthrottled) is due one batch's time after the previous one was due, and goes
    no earlier. Time nobody used (a pause, a take-over's look-ups, a slow broker) is not saved
    up: after it the sends resume at the rate, never in a catch-up burst. (Carrying one batch
    of credit forward looked harmless, but on the broker it showed: a resumed job's first
    second stored 220 messages at 200 msg/s.)

    A batch late by up to half a batch's time (a busy event loop woke it late, a thread held
    the GIL) keeps the schedule: the next one is still due a batch's time after this one was
    due, so the usual few milliseconds late do not add up (CI measured 166 msg/s at 200 when
    every batch counted from when it really went). Later than that, the schedule starts again
    from now. So two batches never go less than half a batch's time apart, and any second
    holds at most the rate plus one batch. Windows sending concurrently on the session's loop
    take their turns one at a time, so they share the one rate."""

    def __init__(self, rate: int, *, clock=time.monotonic, sleep=asyncio.sleep):
        self.rate, self.clock, self.sleep = rate, clock, sleep
        self.unthrottled = rate >= settings.REDRIVE_MAX_RATE  # the highest rate: as fast as the broker takes them
        self.batch = WINDOW if self.unthrottled else max(1, rate // 20)
        self.next = clock()
        self._turn = asyncio.Lock()

    async def take(self, count: int) -> None:
        """Wait until `count` more messages may go."""
        if self.unthrottled:
            return
        async with self._turn:
            wait = self.next - self.clock()
            if wait > 0:
                await self.sleep(wait)
            now, step = self.clock(), count / self.rate
            self.next = (self.next if now - self.next <= step / 2 else now) + step


@dataclass
class _Window:
    begin: int
    stop: int
    outcome: concurrent.futures.Future  # of _send_window, running on the session's loop


def _drain(
    session: ClusterSession, job: RedriveJob, token: str, source: str, end: int, pacer: Pacer, readable: bool
) -> bool:
    """Send one source queue from its checkpoint to `end`; False when the job was stopped.

    Up to IN_FLIGHT windows are read and sent on the session's loop while this thread records
    the oldest of them: the database writes then cost no time on the wire."""
    point = job.checkpoints[source]
    maybe_sent_until = point.get("inflight", point["next"])  # windows a dead worker may have sent
    begin, windows = point["next"], collections.deque()
    depth = min(IN_FLIGHT, max(1, 2 * job.rate // WINDOW))  # about two seconds of sends ahead
    try:
        while True:
            job.refresh_from_db()
            ours = job.run_token == token and job.state == RedriveJob.State.RUNNING
            if ours and begin < end:
                stop = min(end, begin + WINDOW)
                unrecorded_from = windows[0].begin if windows else begin
                _checkpoint(job, token, source, {"next": unrecorded_from, "inflight": stop})
                queue = DlqQueue(*_split(source), begin, stop, readable)
                windows.append(_start_window(session, job, queue, begin < maybe_sent_until, pacer))
                begin = stop
                if len(windows) < depth:
                    continue
            if not windows:
                return ours
            oldest = windows.popleft()
            _record(job, token, source, oldest, inflight=windows[-1].stop if windows else None)
    except BaseException:
        for window in windows:
            window.outcome.cancel()  # unrecorded but covered by "inflight": a take-over checks them
        raise


def _split(source: str) -> tuple[str, int]:
    broker, queue_id = source.split("#")
    return broker, int(queue_id)


def _start_window(session: ClusterSession, job: RedriveJob, queue: DlqQueue, resumed: bool, pacer: Pacer) -> _Window:
    """Read and send [queue.min, queue.max) on the session's loop; `resumed`: a dead worker may
    have sent some of it, so what is recorded is skipped and the rest looked for first."""
    recorded = _recorded_offsets(job, queue.source, queue.min, queue.max) if resumed else set()
    outcome = session.start(
        lambda client: _send_window(client, session.reader, job, queue, recorded, check_target=resumed, pacer=pacer),
        seconds=max(60.0, IN_FLIGHT * WINDOW / job.rate + 30),
    )
    return _Window(queue.min, queue.max, outcome)


def _checkpoint(job: RedriveJob, token: str, source: str, point: dict) -> None:
    with transaction.atomic():
        RedriveJob.objects.filter(pk=job.pk, run_token=token).update(
            checkpoints={**job.checkpoints, source: point}, heartbeat_at=timezone.now()
        )


def _recorded_offsets(job: RedriveJob, source: str, begin: int, stop: int) -> set[int]:
    return set(
        RedrivenMessage.objects.filter(
            job=job, source=source, source_offset__gte=begin, source_offset__lt=stop
        ).values_list("source_offset", flat=True)
    )


def _record(job: RedriveJob, token: str, source: str, window: _Window, *, inflight: int | None) -> None:
    """Wait for a sent window, then record it, count it and move the checkpoint past it."""
    outcome = window.outcome.result()
    now = timezone.now()
    point = {"next": window.begin if outcome["error"] else window.stop}
    if inflight is not None or outcome["error"]:
        point["inflight"] = max(inflight or 0, window.stop)
    with transaction.atomic():
        record_sent(job, source, outcome["sent"], now)
        job.refresh_from_db(fields=["checkpoints", "failures"])
        moved = RedriveJob.objects.filter(pk=job.pk, run_token=token).update(
            checkpoints={**job.checkpoints, source: point},
            moved=F("moved") + len(outcome["sent"]),
            recovered=F("recovered") + outcome["recovered"],
            failed=F("failed") + len(outcome["failures"]),
            failures=(job.failures + outcome["failures"])[-50:],
            heartbeat_at=now,
        )
        if not moved:
            raise RuntimeError(f"redrive #{job.pk} was taken over by another worker")
    if outcome["error"]:
        raise WindowFailed(outcome["error"])


_RECORD_COLUMNS = ("job_id", "cluster_id", "group", "source", "source_offset", "msg_id", "original_msg_id",
                   "target_topic", "sent_msg_id", "sent_at")  # fmt: skip


def record_sent(job: RedriveJob, source: str, sent: list[dict], at: dt.datetime) -> None:
    """One RedrivenMessage row per message sent, RECORD_ROWS rows per INSERT: the ORM's
    per-object work was a third of an unthrottled redrive, and a row per statement held the
    GIL against the sends once per row. A row already there (a resumed window) is kept."""
    if not sent:
        return
    stamp = RedrivenMessage._meta.get_field("sent_at").get_db_prep_value(at, connection)
    rows = [(job.pk, job.cluster_id, job.group, source, s["source_offset"], s["msg_id"], s["original_msg_id"],
             s["target_topic"], s["sent_msg_id"], stamp) for s in sent]  # fmt: skip
    with connection.cursor() as cursor:
        for start in range(0, len(rows), RECORD_ROWS):
            chunk = rows[start : start + RECORD_ROWS]
            cursor.execute(_insert_rows(len(chunk)), [value for row in chunk for value in row])


RECORD_ROWS = 256  # 2,560 parameters a statement: far below SQLite's and PostgreSQL's limits


def _insert_rows(count: int) -> str:
    table = connection.ops.quote_name(RedrivenMessage._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in _RECORD_COLUMNS)
    values = ", ".join(["(" + ", ".join(["%s"] * len(_RECORD_COLUMNS)) + ")"] * count)
    if connection.vendor == "sqlite":
        return f"INSERT OR IGNORE INTO {table} ({columns}) VALUES {values}"
    return f"INSERT INTO {table} ({columns}) VALUES {values} ON CONFLICT DO NOTHING"


async def _send_window(
    client: AdminClient,
    reader: AdminClient,
    job: RedriveJob,
    queue: DlqQueue,
    recorded: set[int],
    *,
    check_target: bool,
    pacer: Pacer,
) -> dict:
    """Read one window of the DLQ (with `reader`, all its pulls at once) and send what matches
    (with `client`, pipelined in the pacer's batches). A window that cannot be read is not
    sent at all: its outcome carries the "error"."""
    try:
        selection, pulls = Selection.from_wire(job.selection), -(-queue.count // CHUNK)
        messages = [m async for _, m in scan(reader, job.group, selection, [queue], pulls_at_once=pulls)]
    except RocketMQError as exc:
        error = f"reading {queue.source} failed: {type(exc).__name__}: {exc}"
        return {"sent": [], "failures": [], "error": error, "recovered": 0}
    sent, failures, outgoing, recovered = [], [], [], 0
    for message in messages:
        if message.queue_offset in recorded:
            continue
        copy = _copy(job, queue, message)
        try:
            there = check_target and await _already_there(client, copy.topic, copy.unique_key)
        except RocketMQError as exc:  # unknown is not "not there": sending again could make a second copy
            error = (f"could not tell whether {queue.source}:{message.queue_offset} went out before the take-over "
                     f"({type(exc).__name__}: {exc}); it was not sent again")  # fmt: skip
            return {"sent": sent, "failures": failures, "error": error, "recovered": recovered}
        if there:
            sent.append(_sent_row(message, copy))  # went out before the crash: record it, do not resend
            recovered += 1
        else:
            outgoing.append((message, copy))
    for start in range(0, len(outgoing), pacer.batch):
        batch = outgoing[start : start + pacer.batch]
        await pacer.take(len(batch))
        for attempt in range(BUSY_RETRIES + 1):
            results = await client.actions.send_messages([copy for _, copy in batch])
            busy = []
            for (message, copy), result in zip(batch, results, strict=True):
                if isinstance(result, BrokerBusy) and attempt < BUSY_RETRIES:
                    busy.append((message, copy))  # refused before it was stored: sending again is safe
                elif isinstance(result, RocketMQError):
                    failures.append({"offset": message.queue_offset, "msg_id": message.msg_id, "error": str(result)})
                else:
                    sent.append(_sent_row(message, copy))
            if not busy:
                break
            await asyncio.sleep(BUSY_BACKOFF * 2**attempt)
            batch = busy
    return {"sent": sent, "failures": failures, "error": "", "recovered": recovered}


def _copy(job: RedriveJob, queue: DlqQueue, message: Message) -> Outgoing:
    """The message as it is sent again: its keys, tags and properties, plus where it came from."""
    properties = {k: v for k, v in message.properties.items() if k not in BROKER_PROPERTIES}
    properties["REDRIVE_JOB"] = str(job.pk)
    properties["REDRIVE_SOURCE"] = f"{queue.source}:{message.queue_offset}"
    # the id the operator knew it by: a copy that fails again comes back under a new id
    properties.setdefault("REDRIVE_FROM_ID", message.msg_id)
    properties.setdefault("ORIGIN_MESSAGE_ID", message.msg_id)
    if job.target == RedriveJob.Target.GROUP:
        topic = retry_topic(job.group)
        properties["RETRY_TOPIC"] = message.original_topic  # what the consumer sees as the topic
    else:
        topic = message.original_topic if job.target == RedriveJob.Target.ORIGINAL else job.target_topic
        properties.pop("RETRY_TOPIC", None)
    return Outgoing(
        topic=topic,
        body=message.body,
        properties=properties,
        unique_key=copy_key(job.pk, queue.source, message.queue_offset),
        reconsume_times=0 if job.target == RedriveJob.Target.GROUP else None,
    )


async def _already_there(client: AdminClient, topic: str, key: str) -> bool:
    """Asks every master of the topic; one that does not answer raises (it may hold the copy)."""
    return bool(await client.messages.query_by_unique_key(topic, key))


def _sent_row(message: Message, copy: Outgoing) -> dict:
    return {
        "source_offset": message.queue_offset,
        "msg_id": message.msg_id,
        "original_msg_id": message.properties.get("ORIGIN_MESSAGE_ID", ""),
        "target_topic": copy.topic,
        "sent_msg_id": copy.unique_key,
    }
