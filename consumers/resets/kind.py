"""Offset resets as a kind of change: what the workflow calls for a reset request."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone

from ..apischema import JAVA_LONG_MAX, Bool, Choice, Int, List, Map, Obj, Str
from ..changes import kinds, notify
from ..changes.models import ChangeRequest, State
from ..core import ChangeRefused
from . import services
from .execute import execute_reset
from .strategies import STRATEGIES, InvalidReset

# the body of POST /api/changes/ for a reset: its "params"
API_PARAMS = Obj(
    {
        "strategy": Choice(tuple(STRATEGIES)),
        "topics": List(Str(max_length=255, required=True), max_items=1000),
        "include_retry": Bool(),
        "timestamp_ms": Int(0, JAVA_LONG_MAX),
        "shift": Int(-JAVA_LONG_MAX, JAVA_LONG_MAX),
        "source_group": Str(max_length=255),
        "offsets": Map(Int(0, JAVA_LONG_MAX)),
    },
    required=("strategy",),
)


def _execute(request_id: int) -> str:
    ended = execute_reset(request_id)
    if ended is None:
        return "another worker has it"
    notify.decided(ended)
    return ended.state


def _take_over() -> None:
    """Resets whose worker stopped reporting: the next run takes over on the old token."""
    from ..changes.tasks import execute_change

    stale_before = timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS)
    stale = ChangeRequest.objects.filter(
        kind=ChangeRequest.Kind.RESET, state=State.RUNNING, heartbeat_at__lt=stale_before
    ).values_list("pk", flat=True)
    for request_id in stale:
        execute_change.delay(request_id)


def _refresh(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    try:
        return services.refresh_preview(request, actor=actor)
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc


def _undo(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
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
        execute=_execute,
        take_over=_take_over,
        moved_since=services.moved_since,
        actions={"refresh": _refresh, "undo": _undo},
        api_params=API_PARAMS,
        api_create=_api_create,
    )
)
