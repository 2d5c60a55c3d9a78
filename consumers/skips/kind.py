"""Message skips as a kind of change: what the workflow calls for a skip request. A skip runs,
is taken over, verified and undone as a reset of one queue (resets.execute), with its own step
first (skips.execute: still pinned, the copies in the DLQ)."""

from __future__ import annotations

import functools

from ..changes import kinds, workflow
from ..changes.guards import ChangeRefused
from ..changes.models import ChangeRequest, State
from ..changes.services import requeue
from ..jobs import claims
from ..resets import kind as reset_kind
from ..resets import services as resets
from ..resets.strategies import InvalidReset
from . import services
from .execute import before_reset


def _refresh(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    skip = request.params["skip"]
    at = services.Position(skip["topic"], skip["broker"], skip["queue_id"], skip["offset"])
    try:
        found = services.plan(request.cluster, request.group, at, count=skip["count"], copy_to_dlq=skip["copy_to_dlq"])
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc
    return workflow.replan(request, actor=actor, plan=found)


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
        execute=functools.partial(reset_kind.run, before=before_reset),
        moved_since=resets.moved_since,
        effect_changed=services.still_pinned,
        actions={"refresh": _refresh, "undo": reset_kind.undo},
        api_params=services.API_PARAMS,
        api_create=_api_create,
        detail_template="skips/_skipped.html",
    )
)


# a skip whose worker went silent is taken over like a reset (its copies are looked for first)
claims.register(ChangeRequest, running=State.RUNNING, requeue=requeue, only={"kind": ChangeRequest.Kind.SKIP})
