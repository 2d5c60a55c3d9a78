"""DLQ redrive jobs: plan, approve when large, run at a rate, pause, resume, cancel, and
survive a worker that dies, sending every selected message exactly once.

Exactly once, by design:
- The job's selection is fixed when it is planned: per source queue, the offsets [min, max)
  of that moment (`bounds`); later dead letters are not part of it.
- A worker claims the job with a conditional UPDATE (queued -> running with its own token),
  so a second delivery or a second worker does nothing.
- It works one window of messages per source queue at a time. Before sending a window it
  stores the checkpoint {"next": first offset, "inflight": end of the window}; after sending
  it records one RedrivenMessage row per message sent, moves the checkpoint to the window's
  end and counts, in one transaction.
- Each copy carries a UNIQ_KEY derived from (job, source queue, offset): the same message of
  the same job always has the same key. A worker that takes over a dead run re-reads the window
  that was in flight and, for each message without a RedrivenMessage row, asks the target
  topic for that key (the broker's index of UNIQ_KEY) before sending: found means it was sent
  before the crash, and it is recorded instead of sent again.
Cancel stops between windows: what was moved stays moved (the job page says so). Pause keeps
the checkpoints; resume queues the job again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import time
import uuid

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from ..changes import audit, workflow
from ..changes.models import ChangeRequest
from ..changes.workflow import Actor, ChangeRefused
from ..clusters.connect import ClusterSession, cluster_session, run_on_cluster
from ..models import Cluster
from ..rocketmq import AdminClient, RocketMQError, TopicNotFound
from ..rocketmq.codes import retry_topic
from ..rocketmq.message import Message
from ..rocketmq.models.topology import Perm
from ..roles import REQUEST, perm
from .browse import DlqQueue, Selection, dlq_queues, scan
from .models import RedriveJob, RedrivenMessage

ACTIVE = {
    RedriveJob.State.AWAITING_APPROVAL,
    RedriveJob.State.QUEUED,
    RedriveJob.State.RUNNING,
    RedriveJob.State.PAUSED,
}
WINDOW = 1024  # messages per window: one checkpoint, one transaction
# properties the broker sets on a stored message: a new send gets its own
BROKER_PROPERTIES = {"UNIQ_KEY", "MIN_OFFSET", "MAX_OFFSET", "REAL_TOPIC", "REAL_QID", "WAIT", "CLUSTER", "MSG_REGION",
                     "TRACE_ON", "DELAY", "CONSUME_START_TIME", "__SHARDINGKEY"}  # fmt: skip


def copy_key(job_id: int, source: str, offset: int) -> str:
    return hashlib.md5(f"redrive/{job_id}/{source}/{offset}".encode(), usedforsecurity=False).hexdigest().upper()


# planning


def plan_redrive(
    *,
    actor: Actor,
    cluster: Cluster,
    group: str,
    selection: Selection,
    target: str,
    target_topic: str = "",
    rate: int,
    reason: str = "",
) -> RedriveJob:
    """Check, count and create a job: queued, or waiting for an approver when it is large."""
    if not actor.user.has_perm(perm(REQUEST)):
        raise ChangeRefused("redriving needs the operator role", 403)
    if cluster.read_only:
        raise ChangeRefused(f"cluster {cluster.name} is read-only: it refuses resets and redrives", 403)
    if not 1 <= rate <= settings.REDRIVE_MAX_RATE:
        raise ChangeRefused(f"the rate must be between 1 and {settings.REDRIVE_MAX_RATE} messages per second")
    if target not in RedriveJob.Target.values:
        raise ChangeRefused(f"unknown target {target!r}; one of: {', '.join(RedriveJob.Target.values)}")
    if target == RedriveJob.Target.TOPIC and not target_topic.strip():
        raise ChangeRefused("redriving to another topic needs the topic")
    if RedriveJob.objects.filter(cluster=cluster, group=group, state__in=ACTIVE).exists():
        raise ChangeRefused(f"a redrive of %DLQ%{group} is already active: one job per DLQ at a time", 409)
    counted = run_on_cluster(cluster, lambda c: _count(c, group, selection, target, target_topic.strip()))
    if counted["total"] == 0:
        raise ChangeRefused("no message in the DLQ matches the selection")
    large = counted["total"] > settings.REDRIVE_APPROVAL_THRESHOLD
    if large and not (reason or "").strip():
        raise ChangeRefused(
            f"{counted['total']} messages is more than {settings.REDRIVE_APPROVAL_THRESHOLD}: "
            "it needs an approver, and a reason for them"
        )
    with transaction.atomic():
        job = RedriveJob.objects.create(
            cluster=cluster,
            group=group,
            selection=selection.to_wire(),
            target=target,
            target_topic=target_topic.strip(),
            rate=rate,
            state=RedriveJob.State.AWAITING_APPROVAL if large else RedriveJob.State.QUEUED,
            total=counted["total"],
            bounds=counted["bounds"],
            checkpoints={source: {"next": start} for source, start in counted["starts"].items()},
            created_by=actor.user,
        )
        details = {"job": job.pk, "total": job.total, "target": job.target_description, "rate": rate,
                   "selection": selection.describe()}  # fmt: skip
        audit.record("redrive-plan", username=actor.username, remote_addr=actor.remote_addr, cluster=cluster.name,
                     group=group, details=details)  # fmt: skip
        if large:
            job.change_request = workflow.submit(
                actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.REDRIVE,
                params={"job": job.pk, "selection": selection.to_wire(), "target": job.target_description,
                        "rate": rate}, plan={"rows": [], "totals": {}, "job": job.pk, "total": job.total},
                reason=reason,
            )  # fmt: skip
            job.save(update_fields=["change_request"])
    return job


async def _count(client: AdminClient, group: str, selection: Selection, target: str, target_topic: str) -> dict:
    queues = await dlq_queues(client, group)
    if not queues:
        raise ChangeRefused(f"group {group} has no dead-letter queue")
    if any(not q.readable for q in queues):
        raise ChangeRefused("the DLQ is not readable (created by a broker before 4.9.2): make it readable first")
    if target == RedriveJob.Target.TOPIC:
        await _check_writable(client, target_topic)
    elif target == RedriveJob.Target.GROUP:
        await _check_writable(client, retry_topic(group))
    total = 0
    async for _ in scan(client, group, selection, queues):
        total += 1
    return {
        "total": total,
        "bounds": {q.source: q.max for q in queues},
        "starts": {q.source: q.min for q in queues},
    }


async def _check_writable(client: AdminClient, topic: str) -> None:
    try:
        route = await client.topology.topic_route(topic, max_age=0)
    except TopicNotFound:
        raise ChangeRefused(f"topic {topic} does not exist") from None
    if not any(Perm.writable(q.perm) for q in route.queue_datas):
        raise ChangeRefused(f"topic {topic} is not writable")


# controls


def pause(job: RedriveJob, *, actor: Actor) -> RedriveJob:
    return _move(job, {RedriveJob.State.QUEUED, RedriveJob.State.RUNNING}, RedriveJob.State.PAUSED, actor, "pause")


def resume(job: RedriveJob, *, actor: Actor) -> RedriveJob:
    resumed = _move(job, {RedriveJob.State.PAUSED}, RedriveJob.State.QUEUED, actor, "resume", run_token="")
    _enqueue(resumed)
    return resumed


def cancel(job: RedriveJob, *, actor: Actor) -> RedriveJob:
    states = {RedriveJob.State.QUEUED, RedriveJob.State.RUNNING, RedriveJob.State.PAUSED,
              RedriveJob.State.AWAITING_APPROVAL}  # fmt: skip
    return _move(job, states, RedriveJob.State.CANCELLED, actor, "cancel", finished_at=timezone.now())


def _move(job: RedriveJob, expected: set, to: str, actor: Actor, action: str, **fields) -> RedriveJob:
    if not actor.user.has_perm(perm(REQUEST)):
        raise ChangeRefused("controlling a redrive needs the operator role", 403)
    with transaction.atomic():
        if not RedriveJob.objects.filter(pk=job.pk, state__in=expected).update(state=to, **fields):
            now = RedriveJob.objects.get(pk=job.pk).state
            raise ChangeRefused(f"redrive #{job.pk} is {now}: cannot {action} it", 409)
        audit.record(f"redrive-{action}", username=actor.username, remote_addr=actor.remote_addr,
                     cluster=job.cluster.name, group=job.group, details={"job": job.pk})  # fmt: skip
    return RedriveJob.objects.select_related("cluster").get(pk=job.pk)


def _enqueue(job: RedriveJob) -> None:
    from .tasks import run_redrive

    transaction.on_commit(lambda: run_redrive.delay(job.pk))


def start(job: RedriveJob) -> None:
    """Hand a queued job to a worker."""
    _enqueue(job)


def approved(change: ChangeRequest) -> RedriveJob:
    """The approver said yes: the job joins the queue (called by the change workflow)."""
    job = RedriveJob.objects.get(change_request=change)
    RedriveJob.objects.filter(pk=job.pk, state=RedriveJob.State.AWAITING_APPROVAL).update(state=RedriveJob.State.QUEUED)
    return job


def refused(change: ChangeRequest) -> None:
    RedriveJob.objects.filter(change_request=change, state=RedriveJob.State.AWAITING_APPROVAL).update(
        state=RedriveJob.State.REJECTED, finished_at=timezone.now()
    )


# running


def run_job(job_id: int) -> RedriveJob | None:
    """Run (or take over) a job until it is done, paused or cancelled; None when another has it."""
    token = uuid.uuid4().hex
    stale_before = timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS)
    claimed = RedriveJob.objects.filter(pk=job_id, state=RedriveJob.State.QUEUED).update(
        state=RedriveJob.State.RUNNING, run_token=token, heartbeat_at=timezone.now(), started_at=timezone.now()
    ) or RedriveJob.objects.filter(pk=job_id, state=RedriveJob.State.RUNNING, heartbeat_at__lt=stale_before).update(
        run_token=token, heartbeat_at=timezone.now()
    )
    if not claimed:
        return None
    job = RedriveJob.objects.select_related("cluster").get(pk=job_id)
    audit.record("redrive-run", username="system", cluster=job.cluster.name, group=job.group,
                 details={"job": job.pk, "checkpoints": job.checkpoints})  # fmt: skip
    pacer = _Pacer(job.rate)
    try:
        # one client for the whole run: connections and routes are not rebuilt per window
        with cluster_session(job.cluster, mutation=True) as session:
            for source, end in sorted(job.bounds.items()):
                while True:
                    job.refresh_from_db()
                    if job.run_token != token or job.state != RedriveJob.State.RUNNING:
                        return job  # paused, cancelled, or taken over: stop between windows
                    point = job.checkpoints.get(source, {})
                    if point["next"] >= end:
                        break
                    _window(session, job, token, source, point, end, pacer)
    except RocketMQError as exc:
        _fail(job, token, f"{type(exc).__name__}: {exc}")
        return RedriveJob.objects.get(pk=job.pk)
    return _finish(job, token)


class _Pacer:
    """Sends at `rate` per second on average from the job's start, not faster."""

    def __init__(self, rate: int):
        self.rate, self.count, self.started = rate, 0, time.monotonic()

    async def wait(self) -> None:
        if self.rate >= settings.REDRIVE_MAX_RATE:
            return  # the highest rate means: as fast as the broker takes them
        due = self.started + self.count / self.rate
        self.count += 1
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


def _window(
    session: ClusterSession, job: RedriveJob, token: str, source: str, point: dict, end: int, pacer: _Pacer
) -> None:
    begin = point["next"]
    stop = min(end, begin + WINDOW)
    resumed_inflight = point.get("inflight")  # a window a dead worker may have sent in part
    with transaction.atomic():
        checkpoints = {**job.checkpoints, source: {"next": begin, "inflight": stop}}
        RedriveJob.objects.filter(pk=job.pk, run_token=token).update(
            checkpoints=checkpoints, heartbeat_at=timezone.now()
        )
    recorded = set(
        RedrivenMessage.objects.filter(
            job=job, source=source, source_offset__gte=begin, source_offset__lt=stop
        ).values_list("source_offset", flat=True)
    )
    selection = Selection.from_wire(job.selection)
    broker, queue_id = source.split("#")
    queue = DlqQueue(broker, int(queue_id), begin, stop, True)
    outcome = session.run(
        lambda c: _send_window(c, job, queue, selection, recorded, check_target=resumed_inflight is not None,
                               pacer=pacer),
        seconds=max(60.0, 2 * WINDOW / job.rate + 30),
    )  # fmt: skip
    now = timezone.now()
    with transaction.atomic():
        record_sent(job, source, outcome["sent"], now)
        failures = (job.failures + outcome["failures"])[-50:]
        moved = RedriveJob.objects.filter(pk=job.pk, run_token=token).update(
            checkpoints={**checkpoints, source: {"next": stop}},
            moved=F("moved") + len(outcome["sent"]),
            failed=F("failed") + len(outcome["failures"]),
            failures=failures,
            heartbeat_at=now,
        )
        if not moved:
            raise RuntimeError(f"redrive #{job.pk} was taken over by another worker")


_RECORD_COLUMNS = ("job_id", "cluster_id", "group", "source", "source_offset", "msg_id", "original_msg_id",
                   "target_topic", "sent_msg_id", "sent_at")  # fmt: skip


def record_sent(job: RedriveJob, source: str, sent: list[dict], at: dt.datetime) -> None:
    """One RedrivenMessage row per message sent, in one statement: the ORM's per-object work was
    a third of an unthrottled redrive. A row already there (a resumed window) is kept."""
    if not sent:
        return
    table = connection.ops.quote_name(RedrivenMessage._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in _RECORD_COLUMNS)
    marks = ", ".join(["%s"] * len(_RECORD_COLUMNS))
    if connection.vendor == "sqlite":
        sql = f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({marks})"
    else:
        sql = f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING"
    stamp = RedrivenMessage._meta.get_field("sent_at").get_db_prep_value(at, connection)
    rows = [(job.pk, job.cluster_id, job.group, source, s["source_offset"], s["msg_id"], s["original_msg_id"],
             s["target_topic"], s["sent_msg_id"], stamp) for s in sent]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


async def _send_window(
    client: AdminClient, job: RedriveJob, queue: DlqQueue, selection: Selection, recorded: set[int], *,
    check_target: bool, pacer: _Pacer,
) -> dict:  # fmt: skip
    sent, failures, pending = [], [], []
    async for _, message in scan(client, job.group, selection, [queue]):
        if message.queue_offset in recorded:
            continue
        key = copy_key(job.pk, queue.source, message.queue_offset)
        topic = _target_topic(job, message)
        if check_target and await _already_there(client, topic, key):
            sent.append(_record(message, topic, key))
            continue
        await pacer.wait()
        pending.append(asyncio.ensure_future(_send(client, job, queue, message, topic, key)))
    for _, outcome in await asyncio.gather(*pending):
        (sent if "sent_msg_id" in outcome else failures).append(outcome)
    return {"sent": sent, "failures": failures}


def _target_topic(job: RedriveJob, message: Message) -> str:
    if job.target == RedriveJob.Target.GROUP:
        return retry_topic(job.group)
    if job.target == RedriveJob.Target.ORIGINAL:
        return message.original_topic
    return job.target_topic


async def _already_there(client: AdminClient, topic: str, key: str) -> bool:
    try:
        return bool(await client.messages.query_by_unique_key(topic, key))
    except RocketMQError:
        return False


def _record(message: Message, topic: str, key: str) -> dict:
    return {
        "source_offset": message.queue_offset,
        "msg_id": message.msg_id,
        "original_msg_id": message.properties.get("ORIGIN_MESSAGE_ID", ""),
        "target_topic": topic,
        "sent_msg_id": key,
    }


async def _send(client: AdminClient, job: RedriveJob, queue: DlqQueue, message: Message, topic: str, key: str):
    properties = {k: v for k, v in message.properties.items() if k not in BROKER_PROPERTIES}
    properties["REDRIVE_JOB"] = str(job.pk)
    properties["REDRIVE_SOURCE"] = f"{queue.source}:{message.queue_offset}"
    properties.setdefault("ORIGIN_MESSAGE_ID", message.msg_id)
    if job.target == RedriveJob.Target.GROUP:
        properties["RETRY_TOPIC"] = message.original_topic  # what the consumer sees as the topic
    else:
        properties.pop("RETRY_TOPIC", None)
    try:
        await client.actions.send_message(
            topic,
            message.body,
            properties=properties,
            unique_key=key,
            reconsume_times=0 if job.target == RedriveJob.Target.GROUP else None,
        )
    except RocketMQError as exc:
        return message.msg_id, {"offset": message.queue_offset, "msg_id": message.msg_id, "error": str(exc)}
    return message.msg_id, _record(message, topic, key)


def _finish(job: RedriveJob, token: str) -> RedriveJob:
    job.refresh_from_db()
    state = RedriveJob.State.DONE if job.failed == 0 else RedriveJob.State.FAILED
    if RedriveJob.objects.filter(pk=job.pk, run_token=token, state=RedriveJob.State.RUNNING).update(
        state=state, finished_at=timezone.now()
    ):
        audit.record("redrive-result", username="system", cluster=job.cluster.name, group=job.group,
                     details={"job": job.pk, "moved": job.moved, "failed": job.failed, "total": job.total})  # fmt: skip
    return RedriveJob.objects.get(pk=job.pk)


def _fail(job: RedriveJob, token: str, error: str) -> None:
    failures = (job.failures + [{"error": error}])[-50:]
    RedriveJob.objects.filter(pk=job.pk, run_token=token).update(
        state=RedriveJob.State.FAILED, failures=failures, finished_at=timezone.now()
    )
    audit.record("redrive-result", username="system", cluster=job.cluster.name, group=job.group,
                 details={"job": job.pk, "error": error})  # fmt: skip


def progress(job: RedriveJob) -> dict:
    """Moved / total, rate and ETA for the job page."""
    elapsed = ((job.finished_at or timezone.now()) - job.started_at).total_seconds() if job.started_at else 0
    rate = job.moved / elapsed if elapsed > 0 else None
    left = max(0, job.total - job.moved - job.failed)
    return {
        "moved": job.moved,
        "failed": job.failed,
        "total": job.total,
        "percent": round(100 * (job.moved + job.failed) / job.total, 1) if job.total else 100.0,
        "rate": round(rate, 1) if rate else None,
        "eta_seconds": round(left / rate) if rate and job.state == RedriveJob.State.RUNNING else None,
    }
