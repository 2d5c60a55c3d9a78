"""Message skips as a kind of change: what the workflow calls for a skip request. A skip runs,
is taken over, verified and undone as a reset of one queue (resets.execute), with its own step
first (skips.execute: still pinned, the copies in the DLQ)."""

from __future__ import annotations

from .. import claims
from ..changes import kinds, notify, workflow
from ..changes.models import ChangeRequest, State
from ..core import ChangeRefused
from ..resets import services as resets
from ..resets.execute import execute_reset
from ..resets.strategies import InvalidReset
from . import services
from .execute import before_reset


def _execute(request_id: int) -> str:
    ended = execute_reset(request_id, before=before_reset)
    if ended is None:
        return "another worker has it"
    notify.decided(ended)
    return ended.state


def _refresh(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    skip = request.params["skip"]
    at = services.Position(skip["topic"], skip["broker"], skip["queue_id"], skip["offset"])
    try:
        found = services.plan(request.cluster, request.group, at, count=skip["count"], copy_to_dlq=skip["copy_to_dlq"])
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc
    return workflow.replan(request, actor=actor, plan=found)


def _undo(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    try:
        return resets.undo(request, actor=actor, reason=reason or f"undo of #{request.pk}")
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc


def _api_create(*, actor, cluster, group: str, params: dict, reason: str) -> ChangeRequest:
    at = services.Position(params["topic"], params["broker"], params["queue_id"], params["offset"])
    try:
        return services.request_skip(actor=actor, cluster=cluster, group=group, at=at, count=params.get("count") or 1,
                                     copy_to_dlq=params.get("copy_to_dlq", True), reason=reason)  # fmt: skip
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc


SKIP = kinds.register(
    kinds.ChangeKind(
        name=ChangeRequest.Kind.SKIP,
        execute=_execute,
        moved_since=resets.moved_since,
        effect_changed=services.still_pinned,
        actions={"refresh": _refresh, "undo": _undo},
        api_params=services.API_PARAMS,
        api_create=_api_create,
        detail_template="skips/_skipped.html",
    )
)


def _requeue(request_id: int) -> None:
    from ..changes.tasks import execute_change

    execute_change.delay(request_id)


# a skip whose worker went silent is taken over like a reset (its copies are looked for first)
claims.register(ChangeRequest, running=State.RUNNING, requeue=_requeue, only={"kind": ChangeRequest.Kind.SKIP})
