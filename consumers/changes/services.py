"""One entry for every decision on a request, from the pages and the API alike: approve (and
queue the run once the transaction commits), reject, cancel, and whatever further decisions the
request's kind registered (a reset's refresh and undo)."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from . import kinds, notify, workflow
from .guards import Actor, ChangeRefused
from .models import ChangeRequest, State


def approve_alone(request: ChangeRequest, *, actor: Actor, because: str) -> ChangeRequest:
    """Approved by its own author, for the one reason its kind allows (workflow.approve_alone),
    and queued to run."""
    return _queued(workflow.approve_alone(request, actor=actor, because=because))


def _queued(approved: ChangeRequest) -> ChangeRequest:
    notify.decided(approved)
    transaction.on_commit(lambda: requeue(approved.pk))
    return approved


def requeue(request_id: int) -> None:
    """Queue the request's run (execute_change): after approval, and for a take-over of a run
    whose worker went silent (the kinds register this with consumers/jobs/claims.py)."""
    from .tasks import execute_change

    execute_change.delay(request_id)


def decide(
    request: ChangeRequest, action: str, *, actor: Actor, reason: str = "", accept_unreadable: bool = False
) -> ChangeRequest:
    kind = kinds.of(request)
    if action == "approve":
        approved = workflow.approve(request, actor=actor, accept_unreadable=accept_unreadable)
        if approved.state != State.APPROVED:
            return approved  # one team's part: it waits for the others' approvers, and nothing runs
        return _queued(approved)
    if action == "reject":
        rejected = workflow.reject(request, actor=actor, reason=reason)
        notify.decided(rejected)
        kind.ended_unrun(rejected)
        return rejected
    if action == "cancel":
        cancelled = workflow.cancel(request, actor=actor, reason=reason)
        kind.ended_unrun(cancelled)
        return cancelled
    if action in kind.actions:
        return kind.actions[action](request, actor=actor, reason=reason)
    offered = ", ".join(["approve", "reject", "cancel", *kind.actions])
    raise ChangeRefused(
        _("unknown action %(action)r for a %(kind)s; one of %(offered)s")
        % {"action": action, "kind": request.get_kind_display(), "offered": offered}
    )
