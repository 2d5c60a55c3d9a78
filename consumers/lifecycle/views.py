"""GET /groups/abandoned/ and /api/groups/abandoned/: the groups no client has run for a while;
/groups/<cluster>/<group>/delete/: what deleting one would remove, and the request."""

from __future__ import annotations

import time

from django import forms
from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..changes.guards import Actor, ChangeRefused
from ..changes.pages import submit_from
from ..identity import (
    REQUEST,
    api_view,
    cluster_or_404,
    console_action,
    console_page,
    remote_addr,
    scope_of,
    visible_clusters,
)
from ..jobs.redis_client import get_redis
from ..rocketmq import RocketMQError
from ..web.errors import bad_request, json_error
from ..web.inputs import AsciiIntegerField
from . import deletion
from .abandoned import abandoned_groups
from .unpaired import unpaired_groups


class AbandonedForm(forms.Form):
    days = AsciiIntegerField(required=False, min_value=0, max_value=3650,
                             help_text=gettext_lazy("no client online for at least this many days"))  # fmt: skip
    cluster = forms.CharField(required=False, max_length=64)

    def days_or_default(self) -> int:
        days = self.cleaned_data["days"]
        return settings.ABANDONED_AFTER_DAYS if days is None else days


def _found(request):
    """(form, the abandoned rows or None when the form is invalid, the unpaired groups per cluster)."""
    form = AbandonedForm(request.GET)
    if not form.is_valid():
        return form, None, []
    clusters = visible_clusters(request)
    if form.cleaned_data["cluster"]:
        clusters = [c for c in clusters if c.name == form.cleaned_data["cluster"]]
    scope = scope_of(request.user)
    rows = abandoned_groups(get_redis(), clusters, scope, days=form.days_or_default(), now=time.time())
    return form, rows, [unpaired_groups(c, scope) for c in clusters]


@console_page
def abandoned_page(request):
    form, rows, unpaired = _found(request)
    if rows is None:
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.errors.as_text()})
    context = {"form": form, "rows": rows, "days": form.days_or_default(), "unpaired": unpaired, "nav": "groups"}
    return render(request, "lifecycle/abandoned.html", context)


@api_view
def abandoned_api(request):
    form, rows, unpaired = _found(request)
    if rows is None:
        return json_error(400, "invalid filter", fields=form.errors.get_json_data())
    return JsonResponse({"days": form.days_or_default(), "groups": [r.to_wire() for r in rows], "unpaired": unpaired})


class DeleteForm(forms.Form):
    reason = forms.CharField(max_length=2000, label=gettext_lazy("Why"),
                             help_text=gettext_lazy("for the approver: who confirmed the group is unused"))  # fmt: skip


def _delete_page(request, cluster, group: str, *, form=None, status=200, read=True):
    """What a delete would remove and stop (read from the brokers now), and the request form."""
    context = {"cluster": cluster, "group": group, "nav": "groups", "form": form or DeleteForm(),
               "can_request": scope_of(request.user).may(REQUEST, cluster.name, group)}  # fmt: skip
    if read:
        try:
            context["plan"] = deletion.plan_delete(cluster, group)
        except ChangeRefused as exc:
            context["refused"], status = str(exc), max(status, exc.status)
        except RocketMQError as exc:
            why = f"{type(exc).__name__}: {exc}"
            context["refused"] = _("the cluster could not be read: %(error)s") % {"error": why}
            status = max(status, 502)
    return render(request, "lifecycle/delete.html", context, status=status)


@console_page
def delete_page(request, cluster: str, group: str):
    return _delete_page(request, cluster_or_404(request, cluster, group), group)


@console_action
def delete_create(request, cluster: str, group: str):
    found = cluster_or_404(request, cluster, group)
    form = DeleteForm(request.POST)
    if not form.is_valid():
        return _delete_page(request, found, group, form=form, status=400, read=False)
    return submit_from(
        form,
        lambda: deletion.request_delete(actor=Actor(request.user, remote_addr(request)), cluster=found, group=group,
                                        reason=form.cleaned_data["reason"]),
        lambda status: _delete_page(request, found, group, form=form, status=status, read=False),
    )  # fmt: skip
