"""Change requests and the audit log: the list (by state), one request (timeline, preview,
result, decisions), and the audit page with its CSV download."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from ..identity import (
    ADMINISTER,
    APPROVE,
    REQUEST,
    console_action,
    console_page,
    hide_bodies,
    remote_addr,
    scope_of,
    within,
)
from ..languages.labels import label
from ..rocketmq import RocketMQError
from ..web.csvstream import BOM, attachment, csv_writer
from ..web.errors import bad_request
from . import kinds, selectors
from .forms import AuditFilterForm, ChangeFilterForm, DecisionForm
from .guards import Actor, ChangeRefused
from .models import State
from .services import decide
from .workflow import covered_by, single_person_mode, touched_groups


@console_page
def change_list(request):
    form = ChangeFilterForm(request.GET)
    if not form.is_valid():
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.errors.as_text()})
    changes = selectors.change_list(**form.cleaned_data, within=within(request.user))
    return render(request, "changes/list.html", {"changes": changes, "form": form, "states": State, "nav": "changes"})


@console_page
def change_detail(request, pk: int):
    change = selectors.visible_change(pk, scope_of(request.user))
    if change is None:
        raise Http404(_("No change request #%(pk)s") % {"pk": pk})
    return _detail(request, change)


def _detail(request, change, *, status: int = 200):
    moved = None
    scope, where = scope_of(request.user), (change.cluster.name, change.group)
    touched = touched_groups(change)
    may_decide = any(scope.may(APPROVE, change.cluster.name, g) for g in touched)
    # an approver sees, before deciding, what the broker did since the preview was read
    kind = kinds.of(change)
    moved_since = kind.moved_since
    if change.state == State.PENDING and may_decide and not request.htmx and moved_since:
        try:
            moved = moved_since(change)
        except RocketMQError as exc:
            messages.error(request, _("could not read the broker: %(error)s") % {"error": exc})
    context = {
        "change": change,
        "kind_template": kind.detail_template,
        "moved": moved,
        "can_decide": may_decide and (request.user.pk != change.requested_by_id or single_person_mode()),
        "can_request": scope.may(REQUEST, *where),
        "approved_for": sorted(covered_by(change.approvals)),
        "waiting_for": [g for g in touched if g not in covered_by(change.approvals)] if len(touched) > 1 else [],
        # the author cancels; an admin may cancel someone else's request, with a reason
        "cancel_as": "author"
        if request.user.pk == change.requested_by_id
        else "admin"
        if scope.may(ADMINISTER, *where)
        else None,
        "nav": "changes",
    }
    template = "changes/_status.html" if request.htmx else "changes/detail.html"
    return render(request, template, context, status=status)


@console_action
def change_action(request, pk: int):
    change = selectors.visible_change(pk, scope_of(request.user))
    if change is None:
        raise Http404(_("No change request #%(pk)s") % {"pk": pk})
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return bad_request(request, _("Invalid decision: %(errors)s") % {"errors": form.errors.as_text()})
    try:
        result = decide(
            change,
            form.cleaned_data["action"],
            actor=Actor(request.user, remote_addr(request)),
            reason=form.cleaned_data["reason"],
            accept_unreadable=form.cleaned_data["accept_unreadable"],
        )
    except ChangeRefused as exc:
        # shown on the request's page with the refusal's status (403 for who, 409 for when)
        messages.error(request, str(exc))
        return _detail(request, change, status=exc.status)
    except RocketMQError as exc:
        messages.error(request, _("the broker could not be read: %(error)s") % {"error": exc})
        return redirect("consumers:change-detail", pk)
    state = label("change state", result.state)
    messages.success(request, _("request #%(pk)s: %(state)s") % {"pk": result.pk, "state": state})
    return redirect("consumers:change-detail", result.pk)


@console_page
def audit_log(request):
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.errors.as_text()})
    if form.cleaned_data["format"] == "csv":
        events = selectors.audit_events(**form.filters(), limit=None, within=within(request.user, cluster="cluster"))
        response = StreamingHttpResponse(_csv_rows(events, request.user), content_type="text/csv")
        response["Content-Disposition"] = attachment("audit-log.csv")
        return response
    events = selectors.audit_events(**form.filters(), within=within(request.user, cluster="cluster"))
    query = request.GET.copy()
    query["format"] = "csv"
    context = {"events": events, "form": form, "csv_query": query.urlencode(), "nav": "audit"}
    return render(request, "changes/audit.html", context)


AUDIT_COLUMNS = ["id", "at", "username", "remote_addr", "action", "cluster", "group", "change_request", "details"]


def _csv_rows(events, user):
    writer = csv_writer()  # formula-safe: reasons, groups and usernames are typed by people
    yield BOM + writer.writerow(AUDIT_COLUMNS)
    for e in events.iterator():
        yield writer.writerow(
            [
                e.pk,
                e.at.isoformat(),
                e.username,
                e.remote_addr,
                e.action,
                e.cluster,
                e.group,
                e.change_request_id or "",
                json.dumps(hide_bodies(user, e.details), sort_keys=True),
            ]  # fmt: skip
        )
