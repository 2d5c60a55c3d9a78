"""One entry for every decision on a request, from the pages and the API alike: approve
(and queue the run once the transaction commits), reject, cancel, refresh the preview, undo."""

from __future__ import annotations

from django.db import transaction

from . import notify, workflow
from .models import ChangeRequest
from .workflow import Actor, ChangeRefused


def decide(request: ChangeRequest, action: str, *, actor: Actor, reason: str = "") -> ChangeRequest:
    from ..resets import services as resets

    if action == "approve":
        approved = workflow.approve(request, actor=actor)
        notify.decided(approved)
        from .tasks import execute_change

        transaction.on_commit(lambda: execute_change.delay(approved.pk))
        return approved
    if action == "reject":
        rejected = workflow.reject(request, actor=actor, reason=reason)
        notify.decided(rejected)
        _refused_redrive(rejected)
        return rejected
    if action == "cancel":
        cancelled = workflow.cancel(request, actor=actor)
        _refused_redrive(cancelled)
        return cancelled
    from ..resets.strategies import InvalidReset

    if action in ("refresh", "undo") and request.kind != ChangeRequest.Kind.RESET:
        raise ChangeRefused(f"{action} applies to offset resets only", 409)
    try:
        if action == "refresh":
            return resets.refresh_preview(request, actor=actor)
        if action == "undo":
            return resets.undo(request, actor=actor, reason=reason or f"undo of #{request.pk}")
    except InvalidReset as exc:
        raise ChangeRefused(str(exc)) from exc
    raise ChangeRefused(f"unknown action {action!r}; one of approve, reject, cancel, refresh, undo")


def _refused_redrive(request: ChangeRequest) -> None:
    if request.kind == ChangeRequest.Kind.REDRIVE:
        from ..dlq.redrive import refused

        refused(request)
