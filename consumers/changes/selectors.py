"""Reads for the change and audit pages: a fixed number of queries each."""

from __future__ import annotations

import datetime as dt

from django.db.models import Q, QuerySet

from ..audit.models import AuditEvent
from .models import ChangeRequest, State

AUDIT_PAGE = 200


def _within(found: QuerySet, within: Q | None) -> QuerySet:
    """Only the rows of the groups in the user's scope (`within`: grants.scope_q; None: all)."""
    return found if within is None else found.filter(within)


def change_list(
    *, state: str = "", cluster: str = "", group: str = "", within: Q | None = None
) -> QuerySet[ChangeRequest]:
    found = _within(ChangeRequest.objects.select_related("cluster", "requested_by", "decided_by"), within)
    if state:
        found = found.filter(state=state)
    if cluster:
        found = found.filter(cluster__name=cluster)
    if group:
        found = found.filter(group=group)
    return found[:500]


def pending_count(within: Q | None = None) -> int:
    return _within(ChangeRequest.objects.filter(state=State.PENDING), within).count()


def visible_change(pk: int, scope) -> ChangeRequest | None:
    """The request, if `scope` sees one of the groups it touches (the group it changes, or one
    it reads: that group's team approves its part)."""
    from .workflow import touched_groups

    found = change_detail(pk)
    if found is None or scope.everything:
        return found
    return found if any(scope.sees_group(found.cluster.name, g) for g in touched_groups(found)) else None


def change_detail(pk: int, within: Q | None = None) -> ChangeRequest | None:
    return (
        _within(ChangeRequest.objects, within)
        .select_related("cluster", "requested_by", "decided_by", "undo_of")
        .prefetch_related("events", "undone_by")
        .filter(pk=pk)
        .first()
    )


def audit_events(
    *,
    cluster: str = "",
    group: str = "",
    user: str = "",
    action: str = "",
    since: dt.date | None = None,
    until: dt.date | None = None,
    limit: int | None = AUDIT_PAGE,
    within: Q | None = None,
) -> QuerySet[AuditEvent]:
    found = _within(AuditEvent.objects.order_by("-id"), within)
    if cluster:
        found = found.filter(cluster=cluster)
    if group:
        found = found.filter(group=group)
    if user:
        found = found.filter(username=user)
    if action:
        found = found.filter(action=action)
    if since:
        found = found.filter(at__date__gte=since)
    if until:
        found = found.filter(at__date__lte=until)
    return found[:limit] if limit else found
