"""The four-eyes workflow every change request goes through, whatever it changes.

    draft -> pending -> approved -> running -> done | partial | failed
             pending -> rejected | expired | cancelled        (approved -> cancelled too)

Every move is a conditional UPDATE (`... WHERE state IN (expected)`): when two people or two
workers race, exactly one wins and the other is told what happened. Each move writes its
audit event in the same transaction. The rules (roles, a different approver, expiry, a fresh
enough preview, read-only clusters) are checked here, on the server, for pages and API alike.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from .. import audit
from ..identity import ADMINISTER, APPROVE, REQUEST, scope_of
from . import kinds, notify
from .guards import SYSTEM, Actor, ChangeRefused, require_reason, require_role, require_writable
from .models import ChangeRequest, State


def single_person_mode() -> bool:
    return settings.CHANGES_SINGLE_PERSON_MODE


def transition(
    request: ChangeRequest,
    expected: set[str],
    to: str,
    *,
    actor: Actor,
    action: str,
    details: dict | None = None,
    unchanged: dict | None = None,
    **fields,
) -> ChangeRequest | None:
    """Move the request from one of `expected` to `to`, atomically, with its audit event.
    Returns the updated request, or None when its state was not one of `expected` (or a field
    of `unchanged` no longer had the value given: someone else moved it in between)."""
    with transaction.atomic():
        moved = (
            ChangeRequest.objects.filter(pk=request.pk, state__in=expected, **(unchanged or {}))
            .update(state=to, **fields)
        )  # fmt: skip
        if not moved:
            return None
        fresh = ChangeRequest.objects.select_related("cluster").get(pk=request.pk)
        audit.record(
            action,
            username=actor.username,
            remote_addr=actor.remote_addr,
            cluster=fresh.cluster.name,
            group=fresh.group,
            change_request=fresh,
            details={"from": sorted(expected), "to": to, **(details or {})},
        )
    return fresh


def submit(
    *,
    actor: Actor,
    cluster,
    group: str,
    kind: str,
    params: dict,
    plan: dict,
    reason: str,
    undo_of: ChangeRequest | None = None,
) -> ChangeRequest:
    """Create a pending request (the requester's part)."""
    require_role(actor, REQUEST, _("requesting a change"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    require_reason(reason)
    now = timezone.now()
    with transaction.atomic():
        request = ChangeRequest.objects.create(
            cluster=cluster,
            group=group,
            kind=kind,
            params=params,
            plan=plan,
            planned_at=now,
            reason=reason.strip(),
            state=State.DRAFT,
            requested_by=actor.user,
            expires_at=now + dt.timedelta(seconds=settings.CHANGE_REQUEST_EXPIRY_SECONDS),
            undo_of=undo_of,
        )
        details = {"kind": kind, "params": params, "reason": request.reason}
        if undo_of is not None:
            details["undo_of"] = undo_of.pk
        request = transition(request, {State.DRAFT}, State.PENDING, actor=actor, action="request", details=details)
    return request


def approve(request: ChangeRequest, *, actor: Actor, accept_unreadable: bool = False) -> ChangeRequest:
    """Approve a pending request. A plan that could not read part of what it changes (its
    "unreadable" brokers) is approved only with `accept_unreadable`: the approver says that those
    parts stay as they are, and the run ends partial, naming them."""
    _check_decider(request, actor)
    # before any check of the plan: a finished request is not pending, whatever its kind would
    # say of the broker now (a done skip's group is no longer at the skipped offset)
    if _state_of(request) != State.PENDING:
        raise ChangeRefused(_not_pending(request), 409)
    unreadable = [entry.get("broker", "?") for entry in request.plan.get("unreadable") or []]
    if unreadable and not accept_unreadable:
        raise ChangeRefused(
            _(
                "the plan could not read %(brokers)s: its queues would stay as they are. Approve with "
                "'apply to the readable brokers only' (accept_unreadable) to go ahead, or refresh once they are back"
            )
            % {"brokers": ", ".join(unreadable)},
            409,
        )
    if expire_if_due(request):
        expired = f"{request.expires_at:%Y-%m-%d %H:%M:%S}"
        raise ChangeRefused(_("request #%(pk)s expired at %(at)s UTC") % {"pk": request.pk, "at": expired}, 409)
    age = (timezone.now() - request.planned_at).total_seconds()
    if age > settings.CHANGE_PREVIEW_MAX_AGE_SECONDS:
        raise ChangeRefused(
            _(
                "the preview is %(age)s s old (more than %(limit)s s): refresh it before approving, so you approve "
                "what the broker holds now"
            )
            % {"age": f"{age:.0f}", "limit": settings.CHANGE_PREVIEW_MAX_AGE_SECONDS},
            409,
        )
    changed = kinds.of(request).effect_changed(request)
    if changed:
        raise ChangeRefused(changed, 409)
    # four eyes across the scope: each group the request touches needs an approver who holds
    # approve on it; one who holds them all (an admin) approves at once, otherwise each team does
    touched = touched_groups(request)
    before = covered_by(request.approvals)
    mine = [g for g in touched if g not in before and scope_of(actor.user).may(APPROVE, request.cluster.name, g)]
    if not mine:
        waiting = _waiting(request)
        raise ChangeRefused(
            _("already approved for your groups; waiting for an approver of %(groups)s") % {"groups": waiting}, 409
        )
    entry = {"by": actor.username, "user": actor.user.pk, "groups": mine, "at": timezone.now().isoformat()}
    approvals = [*request.approvals, entry]
    waiting = [g for g in touched if g not in before | set(mine)]
    details = {"single_person_mode": single_person_mode(), "left_unreadable": unreadable, "groups": mine}
    if waiting:
        moved = transition(request, {State.PENDING}, State.PENDING, actor=actor, action="approve-part",
                           details={**details, "waiting_for": waiting}, unchanged={"approvals": request.approvals},
                           approvals=approvals)  # fmt: skip
    else:
        moved = transition(request, {State.PENDING}, State.APPROVED, actor=actor, action="approve", details=details,
                           unchanged={"approvals": request.approvals}, approvals=approvals, decided_by=actor.user,
                           decided_at=timezone.now())  # fmt: skip
    if moved is None:
        now = _state_of(request)
        if now != State.PENDING:
            raise ChangeRefused(_("request #%(pk)s is %(state)s, not pending") % {"pk": request.pk, "state": now}, 409)
        raise ChangeRefused(
            _("request #%(pk)s was approved in part by someone else meanwhile: look again") % {"pk": request.pk}, 409
        )
    return moved


def approve_alone(request: ChangeRequest, *, actor: Actor, because: str) -> ChangeRequest:
    """Approve a request without a second person, for the one reason its kind allows (a site
    setting, off by default: an emergency pause). Audited as such, with the reason, and queued
    to run like any approved request (changes.services.approve_alone queues it)."""
    approved = transition(request, {State.PENDING}, State.APPROVED, actor=actor, action="approve-alone",
                          details={"because": because, "single_person": True}, decided_by=actor.user,
                          decided_at=timezone.now())  # fmt: skip
    if approved is None:
        raise ChangeRefused(_not_pending(request), 409)
    return approved


def touched_groups(request: ChangeRequest) -> list[str]:
    """The groups of its cluster a request changes or reads, each needing its approver."""
    return list(dict.fromkeys([request.group, *kinds.of(request).reads(request)]))


def covered_by(approvals: list[dict]) -> set[str]:
    return {group for entry in approvals for group in entry.get("groups", [])}


def _waiting(request: ChangeRequest) -> str:
    left = [g for g in touched_groups(request) if g not in covered_by(request.approvals)]
    return ", ".join(left) or _("nobody")


def reject(request: ChangeRequest, *, actor: Actor, reason: str) -> ChangeRequest:
    _check_decider(request, actor)
    if not reason.strip():
        raise ChangeRefused(_("rejecting needs a reason"))
    rejected = transition(
        request,
        {State.PENDING},
        State.REJECTED,
        actor=actor,
        action="reject",
        details={"reason": reason.strip()},
        decided_by=actor.user,
        decided_at=timezone.now(),
        decision_reason=reason.strip(),
    )
    if rejected is None:
        raise ChangeRefused(_not_pending(request), 409)
    return rejected


def cancel(request: ChangeRequest, *, actor: Actor, reason: str = "") -> ChangeRequest:
    """The requester withdraws a request that has not started. An admin may withdraw someone
    else's (the author left, the request is wrong) but must say why: the reason is audited.
    Approvers may not: saying no to a request is rejecting it, with a reason, in the open."""
    user = actor.user
    by_author = user == request.requested_by
    if not by_author and not scope_of(user).may(ADMINISTER, request.cluster.name, request.group):
        raise ChangeRefused(_("only the requester (or an admin, with a reason) may cancel a request"), 403)
    if not by_author and not reason.strip():
        raise ChangeRefused(_("cancelling someone else's request needs a reason"))
    details = {} if by_author else {"reason": reason.strip(), "requested_by": request.requested_by.get_username()}
    cancelled = transition(
        request,
        {State.DRAFT, State.PENDING, State.APPROVED},
        State.CANCELLED,
        actor=actor,
        action="cancel",
        details=details,
        **({} if by_author else {"decided_by": user, "decided_at": timezone.now(), "decision_reason": reason.strip()}),
    )
    if cancelled is None:
        state = _state_of(request)
        raise ChangeRefused(
            _("request #%(pk)s is %(state)s: too late to cancel") % {"pk": request.pk, "state": state}, 409
        )
    return cancelled


def replan(request: ChangeRequest, *, actor: Actor, plan: dict) -> ChangeRequest:
    """A fresh preview of a pending request: the new plan replaces the old one (both in the log)."""
    scope, where = scope_of(actor.user), (request.cluster.name, request.group)
    if not (scope.may(REQUEST, *where) or scope.may(APPROVE, *where)):
        raise ChangeRefused(_("refreshing a preview needs the operator or approver role on the group"), 403)
    refreshed = transition(
        request,
        {State.PENDING},
        State.PENDING,
        actor=actor,
        action="refresh-preview",
        # both plans' totals in the log: what the request did before the refresh, and now
        details={
            "previous_planned_at": request.planned_at.isoformat(),
            "previous_totals": request.plan.get("totals"),
            "totals": plan.get("totals"),
        },
        plan=plan,
        planned_at=timezone.now(),
        approvals=[],  # the teams that approved part of it approved the old plan
    )
    if refreshed is None:
        raise ChangeRefused(_not_pending(request), 409)
    notify.replanned(refreshed, by=actor.user, before=request.plan.get("totals"), after=plan.get("totals"))
    return refreshed


def expire_if_due(request: ChangeRequest) -> bool:
    if request.state == State.PENDING and request.expires_at <= timezone.now():
        expired = transition(request, {State.PENDING}, State.EXPIRED, actor=SYSTEM, action="expire")
        if expired is not None:
            kinds.of(expired).ended_unrun(expired)
        return True
    return False


def expire_due() -> int:
    """Expire every pending request past its expiry (a periodic task)."""
    due = ChangeRequest.objects.filter(state=State.PENDING, expires_at__lte=timezone.now())
    return sum(1 for request in due if expire_if_due(request))


def _check_decider(request: ChangeRequest, actor: Actor) -> None:
    """Four eyes across the scope: the decider holds approve on a group the request touches
    (approve covers the groups they hold; reject: any team may say no) and is not its author."""
    scope, cluster = scope_of(actor.user), request.cluster.name
    touched = touched_groups(request)
    if not any(scope.may(APPROVE, cluster, group) for group in touched):
        groups = _(" or ").join(touched)
        raise ChangeRefused(
            _("approving or rejecting needs the approver role on group %(groups)s of %(cluster)s")
            % {"groups": groups, "cluster": cluster},
            403,
        )
    if actor.user.pk == request.requested_by_id and not single_person_mode():
        raise ChangeRefused(_("a request is decided by someone other than its requester (four eyes)"), 403)


def _not_pending(request: ChangeRequest) -> str:
    return _("request #%(pk)s is %(state)s, not pending") % {"pk": request.pk, "state": _state_of(request)}


def _state_of(request: ChangeRequest) -> str:
    return ChangeRequest.objects.filter(pk=request.pk).values_list("state", flat=True).first() or _("gone")
