"""The run of a change that goes broker by broker (a config change, a switch of request mode, a
group's deletion or restore): claimed once, its progress saved with each heartbeat, ended by what
the brokers read back. A kind's executor does the reading and writing between `claim` and
`finish`; these three hold the pattern every such run shares.

A run records in `result` what each broker had before its first write and, per broker, what it
did (`done`: a list or a dict of the brokers done) and what failed (`failed`); `read_back` holds
per broker a check with "ok". The request ends DONE when every planned broker was done and read
back as planned, FAILED when none was done, PARTIAL otherwise.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from .. import audit
from ..jobs import claims
from . import notify
from .models import ChangeRequest, State
from .workflow import SYSTEM, transition


def claim(request_id: int, *, done: str) -> tuple[ChangeRequest, str] | None:
    """(the request, the run's token): approved -> running, or a silent worker's run taken over
    (audited with what it had `done` already); None when another worker has it."""
    request = ChangeRequest.objects.select_related("cluster").get(pk=request_id)
    token = uuid.uuid4().hex
    now = timezone.now()
    claimed = transition(request, {State.APPROVED}, State.RUNNING, actor=SYSTEM, action="run", run_token=token,
                         started_at=now, heartbeat_at=now)  # fmt: skip
    if claimed is not None:
        return claimed, token
    with transaction.atomic():
        token = claims.take_over(ChangeRequest, request.pk, running=State.RUNNING, from_token=request.run_token)
        if token is None:
            return None
        before = sorted(request.result.get(done, []))
        audit.record("resume", username="system", cluster=request.cluster.name, group=request.group,
                     change_request=request, details={f"{done}_before": before})  # fmt: skip
    return ChangeRequest.objects.select_related("cluster").get(pk=request.pk), token


def save(request: ChangeRequest, token: str, result: dict) -> None:
    """The progress so far, with a heartbeat; the run stops if another worker took it over."""
    if not claims.beat(ChangeRequest, request.pk, token, result=result):
        raise RuntimeError(f"request #{request.pk} was taken over by another worker")


def finish(request: ChangeRequest, token: str, result: dict, *, done: str, summary: dict | None = None):
    """End the run by what it did and what was read back; the audit's "result" event gets the
    counts and `summary`."""
    result["untouched"] = request.plan.get("unreadable") or []
    planned = request.plan["brokers"]
    verified = [b for b, check in result.get("read_back", {}).items() if check["ok"]]
    if not result[done]:
        state = State.FAILED
    elif len(verified) == len(planned) and not result["failed"] and not result["untouched"] and not result.get("error"):
        state = State.DONE
    else:
        state = State.PARTIAL
    details = {"brokers": len(planned), done: sorted(result[done]), "verified": verified, "failed": result["failed"],
               "untouched": [u["broker"] for u in result["untouched"]], "error": result.get("error"),
               **(summary or {})}  # fmt: skip
    return end(request, token, result, state, summary=details)


def end(request: ChangeRequest, token: str, result: dict, state: str, *, summary: dict) -> ChangeRequest:
    """Keep the result and move the run to `state` (audited with `summary`), if the run is still
    this worker's."""
    with transaction.atomic():
        if ChangeRequest.objects.filter(pk=request.pk, state=State.RUNNING, run_token=token).update(
            result=result, finished_at=timezone.now()
        ):
            transition(request, {State.RUNNING}, state, actor=SYSTEM, action="result", details=summary)
    return ChangeRequest.objects.get(pk=request.pk)


def runner(execute: Callable[..., ChangeRequest | None]) -> Callable[..., str]:
    """A kind's `execute` for the workflow from its executor (which returns the ended request,
    or None when another worker has the run): the people the request names are told how it
    ended, and the task's result is the end state."""

    def run(request_id: int, **options) -> str:
        ended = execute(request_id, **options)
        if ended is None:
            return "another worker has it"
        notify.decided(ended)
        return ended.state

    run.__name__ = f"run_{getattr(execute, '__name__', 'change')}"
    return run
