"""Reads for the change and audit pages: a fixed number of queries each."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet

from .models import AuditEvent, ChangeRequest, State

AUDIT_PAGE = 200


def change_list(*, state: str = "", cluster: str = "", group: str = "") -> QuerySet[ChangeRequest]:
    found = ChangeRequest.objects.select_related("cluster", "requested_by", "decided_by")
    if state:
        found = found.filter(state=state)
    if cluster:
        found = found.filter(cluster__name=cluster)
    if group:
        found = found.filter(group=group)
    return found[:500]


def pending_count() -> int:
    return ChangeRequest.objects.filter(state=State.PENDING).count()


def change_detail(pk: int) -> ChangeRequest | None:
    return (
        ChangeRequest.objects.select_related("cluster", "requested_by", "decided_by", "undo_of")
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
) -> QuerySet[AuditEvent]:
    found = AuditEvent.objects.order_by("-id")
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
