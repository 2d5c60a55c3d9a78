"""Offset resets as a kind of change: what the workflow calls for a reset request."""

from __future__ import annotations

from ..changes import kinds, runs
from ..changes.guards import ChangeRefused
from ..changes.models import ChangeRequest, State
from ..changes.services import requeue
from ..jobs import claims
from ..web.apischema import JAVA_LONG_MAX, Bool, Choice, Int, List, Map, Obj, Str
from . import services
from .execute import execute_reset
from .strategies import OFFSET_RANGE, SHIFT_RANGE, STRATEGIES, InvalidReset

# the body of POST /api/changes/ for a reset: its "params"
API_PARAMS = Obj(
    {
        "strategy": Choice(tuple(STRATEGIES)),
        "topics": List(Str(max_length=255, required=True), max_items=1000),
        "include_retry": Bool(),
        "timestamp_ms": Int(0, JAVA_LONG_MAX),
        "shift": Int(*SHIFT_RANGE),
        "source_group": Str(max_length=255),
        "offsets": Map(Int(*OFFSET_RANGE)),
    },
    required=("strategy",),
)


# execute_change's body for a reset, and for kinds that run as one (a message skip, with its own
# `before` step: resets.execute)
run = runs.runner(execute_reset)


def _refresh(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    try:
        return services.refresh_preview(request, actor=actor)
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc


def undo(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    """The undo action of a reset, and of any kind whose run records what a reset's does."""
    try:
        return services.undo(request, actor=actor, reason=reason or f"undo of #{request.pk}")
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc


def _api_create(*, actor, cluster, group: str, params: dict, reason: str) -> ChangeRequest:
    try:
        return services.request_reset(actor=actor, cluster=cluster, group=group, params=params, reason=reason)
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc


RESET = kinds.register(
    kinds.ChangeKind(
        name=ChangeRequest.Kind.RESET,
        execute=run,
        moved_since=services.moved_since,
        effect_changed=services.effect_changed,
        actions={"refresh": _refresh, "undo": undo},
        api_params=API_PARAMS,
        api_create=_api_create,
        api_default=True,
        reads=lambda request: [request.params["source_group"]] if request.params.get("source_group") else [],
    )
)


# a reset whose worker went silent is taken over by the next execute_change (only resets beat:
# an approved redrive's request is carried by its job's heartbeat)
claims.register(ChangeRequest, running=State.RUNNING, requeue=requeue, only={"kind": ChangeRequest.Kind.RESET})
