"""Carry out an approved reset exactly once, then prove what the broker holds.

Exactly once:
- A worker claims the request with a conditional UPDATE approved -> running that stores its
  own token; a second delivery of the task, or a second worker, finds it running and leaves.
- Before sending anything the worker stores the offsets the reset replaces (once: a resumed
  run keeps the first reading), then applies the queues in batches, recording after each
  batch which queues are done and refreshing its heartbeat.
- A worker that dies leaves the request running with a stale heartbeat. The next run (the
  task redelivered with acks_late, or the periodic sweep) takes it over with a conditional
  UPDATE on the old token, applies only the queues not yet recorded, and verifies all of them:
  the request ends done, partial or failed from what the broker holds, never silently done.
  A queue whose batch was sent but not recorded before the crash is set again to the same
  target: setting an offset is idempotent.

How each queue is set: on brokers with server-side reset (5.2+ default) through the broker's
reset path per queue (INVOKE_BROKER_TO_RESET_OFFSET with queueId/offset), online or not: the
broker writes the offset and ignores clients' commits of older positions while the reset is
pending. On older brokers an offline group's offsets are committed directly; an online group
there can only be reset to a time, through the client-notify path.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from .. import audit
from ..changes.models import ChangeRequest, State
from ..changes.workflow import SYSTEM, transition
from ..clusters.connect import run_on_cluster
from ..jobs import claims
from ..languages.evidence import register_formats
from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import MessageQueue
from . import effect
from .preview import GroupOffsets, read_group

BATCH = 64


class NotRun(Exception):
    """Raised by a `before` step: no offset is written and the request fails, saying this."""


def execute_reset(request_id: int, *, before: Callable | None = None) -> ChangeRequest | None:
    """Run the request if it is approved, or take it over if its worker died; otherwise leave it.
    Returns the request as it ended, or None when another worker has it.

    `before(request, result, save)`, when given, runs first in every run (a take-over too) and
    keeps its own progress in `result` (save() stores it with the heartbeat); it runs once the
    effect is checked, before any queue is set, and a RocketMQError from it ends the request
    failed with no offset written. A message skip copies its messages
    to the DLQ there, before the offset moves past them."""
    request = ChangeRequest.objects.select_related("cluster").get(pk=request_id)
    token = uuid.uuid4().hex
    claimed = transition(
        request,
        {State.APPROVED},
        State.RUNNING,
        actor=SYSTEM,
        action="run",
        run_token=token,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    if claimed is not None:
        return _run(claimed, token, before)
    taken = _take_over(request)
    return _run(*taken, before) if taken else None


def _take_over(request: ChangeRequest) -> tuple[ChangeRequest, str] | None:
    with transaction.atomic():
        token = claims.take_over(ChangeRequest, request.pk, running=State.RUNNING, from_token=request.run_token)
        if token is None:
            return None
        fresh = ChangeRequest.objects.select_related("cluster").get(pk=request.pk)
        audit.record(
            "resume",
            username="system",
            cluster=fresh.cluster.name,
            group=fresh.group,
            change_request=fresh,
            details={"applied_before": len(fresh.result.get("applied", {}))},
        )
    return fresh, token


def _run(request: ChangeRequest, token: str, before: Callable | None = None) -> ChangeRequest:
    cluster, group = request.cluster, request.group
    rows = [r for r in request.plan["rows"] if r["target"] is not None]
    result = dict(request.result)
    try:
        if "replaced" not in result:
            state = run_on_cluster(cluster, lambda c: _read_group(c, group, cluster.proxy_list))
            current = {r["label"]: state.committed.get(_queue(r)) for r in rows}
            result.update(replaced=current, online=state.online, clients=state.clients, applied={}, failed={})
            if request.params.get("strategy") == "latest":
                # "latest" means the end of each queue when it runs; the result shows the offsets used
                result["targets_used"] = run_on_cluster(cluster, lambda c: _max_offsets(c, rows))
            # the effect as the run finds it, against what was approved: beyond the tolerance
            # nothing is written (an online group moved on since the approval)
            now = effect.recomputed(rows, request.params.get("strategy"), current, result.get("targets_used", {}))
            changed = effect.change(effect.planned(rows), now)
            if changed:
                result["error"] = f"nothing was written: {changed}, then request it again"
                _save(request, token, result)
                return _finish(request, token, rows, result)
            _save(request, token, result)
        if before is not None:  # after the effect check: nothing is copied for a skip that will not happen
            before(request, result, lambda: _save(request, token, result))
        targets = {r["label"]: result.get("targets_used", {}).get(r["label"], r["target"]) for r in rows}
        pending = [r for r in rows if r["label"] not in result["applied"] and r["label"] not in result["failed"]]
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            outcome = run_on_cluster(
                cluster, lambda c, batch=batch: _apply(c, group, batch, targets, online=result["online"]), mutation=True
            )
            for label, error in outcome.items():
                if error is None:
                    result["applied"][label] = targets[label]
                else:
                    result["failed"][label] = error
            _save(request, token, result)
        result["verification"] = _verify(request, rows, targets, result)
    except RocketMQError as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    except NotRun as exc:
        result["error"] = str(exc)
    return _finish(request, token, rows, result)


def _finish(request: ChangeRequest, token: str, rows: list[dict], result: dict) -> ChangeRequest:
    verification = result.get("verification", {})
    verified = [label for label, check in verification.items() if check["ok"]]
    # brokers the plan could not read, left as they were by the approver's choice: never "done"
    result["untouched"] = request.plan.get("unreadable") or []
    if result.get("error") and not result.get("applied"):
        state = State.FAILED
    elif (
        len(verified) == len(rows) and not result.get("failed") and not result.get("error") and not result["untouched"]
    ):
        state = State.DONE
    elif not result.get("applied"):
        state = State.FAILED
    else:
        state = State.PARTIAL
    summary = {
        "queues": len(rows),
        "applied": len(result.get("applied", {})),
        "failed": len(result.get("failed", {})),
        "verified": len(verified),
        "error": result.get("error"),
        "untouched": [u["broker"] for u in result["untouched"]],
    }
    with transaction.atomic():
        moved = ChangeRequest.objects.filter(pk=request.pk, state=State.RUNNING, run_token=token).update(
            result=result, finished_at=timezone.now()
        )
        if moved:
            request = transition(request, {State.RUNNING}, state, actor=SYSTEM, action="result", details=summary)
    return ChangeRequest.objects.get(pk=request.pk)


def _save(request: ChangeRequest, token: str, result: dict) -> None:
    """Record progress and the heartbeat; a worker whose run was taken over stops here."""
    saved = ChangeRequest.objects.filter(pk=request.pk, state=State.RUNNING, run_token=token).update(
        result=result, heartbeat_at=timezone.now()
    )
    if not saved:
        raise RuntimeError(f"request #{request.pk} was taken over by another worker")


def _queue(row: dict) -> MessageQueue:
    return MessageQueue(row["topic"], row["broker"], row["queue_id"])


async def _read_group(client: AdminClient, group: str, proxies: list[str] = ()) -> GroupOffsets:
    return await read_group(client, group, (await client.topology.cluster_info(max_age=5.0)).masters(), proxies)


async def _committed(client: AdminClient, group: str, rows: list[dict]) -> dict[str, int | None]:
    state = await _read_group(client, group)
    return {r["label"]: state.committed.get(_queue(r)) for r in rows}


async def _max_offsets(client: AdminClient, rows: list[dict]) -> dict[str, int]:
    return {r["label"]: await client.progress.max_offset(_queue(r)) for r in rows}


async def _apply(client: AdminClient, group: str, batch: list[dict], targets: dict, *, online: bool | None) -> dict:
    """Set each queue of the batch; label -> None when done, else the error."""
    outcome: dict[str, str | None] = {}
    for row in batch:
        mq, target = _queue(row), targets[row["label"]]
        try:
            if await client.actions.uses_server_side_reset(mq.broker_name):
                await client.actions.reset_queue_offset(group, mq, target)
            elif online is False:  # unknown (a proxy unreadable) is not offline
                await client.actions.update_consumer_offset(group, mq, target)
            else:
                raise RocketMQError(
                    f"{mq.broker_name} has no server-side reset: an online group can only be reset to a time there"
                )
            outcome[row["label"]] = None
        except RocketMQError as exc:
            outcome[row["label"]] = f"{type(exc).__name__}: {exc}"
    return outcome


def _verify(request: ChangeRequest, rows: list[dict], targets: dict, result: dict) -> dict:
    """Watch the committed offsets for the whole RESET_VERIFY_SECONDS (about every second), not
    only until they first look right: a client may commit its old position over the reset a
    moment later. Each queue's check is its last read; a queue seen back at the offset the reset
    replaced at any read is named (`went_back`, with when and who held it), even if it holds the
    target again by the end. `result["watched_seconds"]` says how long it watched."""
    applied = [r for r in rows if r["label"] in result["applied"]]
    started, reset_ms = time.monotonic(), int(time.time() * 1000)
    deadline = started + settings.RESET_VERIFY_SECONDS
    checks: dict[str, dict] = {}
    went_back: dict[str, list[dict]] = {}
    pop, defects = bool(request.plan.get("pop")), request.plan.get("defects", [])
    seen_target: set[str] = set()
    while True:
        current = run_on_cluster(request.cluster, lambda c: _committed(c, request.group, applied))
        seen_target |= {r["label"] for r in applied if current[r["label"]] == targets[r["label"]]}
        checks = {r["label"]: _check(r, targets[r["label"]], current[r["label"]], result, {}) for r in applied}
        back = [label for label, check in checks.items() if check["note"].startswith("overwritten")]
        if back or not all(c["ok"] for c in checks.values()):
            if pop:
                holders = _pop_holders(applied, seen_target, defects)
            else:  # who holds the queues now (running info): asked only when something looks wrong
                holders = _holders(request, result, reset_ms) if result.get("online") else {}
            checks = {r["label"]: _check(r, targets[r["label"]], current[r["label"]], result, holders) for r in applied}
            back = [label for label, check in checks.items() if check["note"].startswith("overwritten")]
        for label in back:
            went_back.setdefault(label, []).append(
                {
                    "after_seconds": round(time.monotonic() - started, 1),
                    "committed": current[label],
                    "by": checks[label]["note"],
                }  # fmt: skip
            )
        if time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    for label, seen in went_back.items():
        checks[label]["went_back"] = seen
        if checks[label]["ok"]:
            went = WENT_BACK % {"committed": seen[0]["committed"], "seconds": seen[0]["after_seconds"]}
            checks[label]["note"] += f"; {went}"
    result["watched_seconds"] = round(time.monotonic() - started, 1)
    return checks


# The verification's notes, in English in the request's result (the API gives them so); the
# change page shows them in the reader's language, parsed back (consumers/languages/evidence.py)
HOLDS_TARGET = gettext_noop("holds the target")
CONSUMED_SINCE = gettext_noop("holds the target; consumed %(count)s since")
CONSUMED_AFTER = gettext_noop("holds the target; consumed %(count)s since (%(who)s consumed after the reset)")
OVERWRITTEN = gettext_noop("overwritten by %(who)s: it committed its position from before the reset (%(replaced)s)")
HOLDS_OTHER = gettext_noop("holds %(now)s, not the target %(target)s")
WENT_BACK = gettext_noop("went back to %(committed)s at +%(seconds)s s")
A_CLIENT = gettext_noop("a client")
POP_CONSUMERS = gettext_noop("POP consumers")
POP_OR_DEFECT = gettext_noop("POP consumers, or the reset did not take (%(defects)s)")
NOTE_FORMATS = (HOLDS_TARGET, CONSUMED_SINCE, CONSUMED_AFTER, OVERWRITTEN, HOLDS_OTHER, WENT_BACK, A_CLIENT,
                POP_CONSUMERS, POP_OR_DEFECT)  # fmt: skip
register_formats(*NOTE_FORMATS)


def _check(row: dict, target: int, now: int | None, result: dict, holders: dict[str, tuple[str, bool]]) -> dict:
    replaced = result["replaced"].get(row["label"])
    check = {"target": target, "committed": now, "replaced": replaced, "ok": now == target}
    if now == target:
        check["note"] = HOLDS_TARGET
    elif now is not None and replaced is not None and now == replaced and target != replaced:
        who, consumed_since = holders.get(row["label"], (A_CLIENT, False))
        if consumed_since and result.get("online") and target < now:
            # back at the old position by consuming everything again, not by an old commit
            note = CONSUMED_AFTER % {"count": now - target, "who": who}
            check.update(ok=True, note=note)
        else:
            check["note"] = OVERWRITTEN % {"who": who, "replaced": replaced}
    elif (
        now is not None
        and result.get("online")
        and target < now
        and ((now <= row["max"] and (replaced is None or now < replaced)) or holders.get(row["label"], ("", False))[1])
    ):
        check.update(ok=True, note=CONSUMED_SINCE % {"count": now - target})
    else:
        check["note"] = HOLDS_OTHER % {"now": now, "target": target}
    return check


def _pop_holders(rows: list[dict], seen_target: set[str], defects: list[str]) -> dict[str, tuple[str, bool]]:
    """POP consumers commit no position: the broker moves a POP group's offset only as it hands
    messages out, so a queue back at (or past) its old position was popped again since the
    reset, not overwritten. Unless the brokers have a known defect by which the reset may not
    take (then only a read at the target proves it took)."""
    if not defects:
        return {r["label"]: (POP_CONSUMERS, True) for r in rows}
    why = POP_OR_DEFECT % {"defects": ", ".join(defects)}
    return {r["label"]: (why, r["label"] in seen_target) for r in rows}


def _holders(request: ChangeRequest, result: dict, reset_ms: int) -> dict[str, tuple[str, bool]]:
    """Per queue: which client holds it now (from the clients' running info), and whether one of
    them consumed from it after the reset. An offset back at the replaced one is either a client
    committing its old position (the Java client may, while it pauses in its reset) or every
    message consumed again: only the client's own last consumption time tells them apart."""
    from ..rocketmq import group_progress

    try:
        progress = run_on_cluster(request.cluster, lambda c: group_progress(c, request.group))
    except RocketMQError:
        return {}
    consumed_at: dict[str, int] = {}
    for info in progress.running_info.values():
        for mq, queue in info.mq_table.items():
            label = f"{mq.topic}@{mq.broker_name}#{mq.queue_id}"
            consumed_at[label] = max(consumed_at.get(label, 0), queue.last_consume_timestamp)
    return {
        label: (",".join(q.clients), consumed_at.get(label, 0) > reset_ms)
        for q in progress.queues
        if q.clients
        for label in [f"{q.topic}@{q.broker_name}#{q.queue_id}"]
    }
