"""GET /groups/abandoned/ and /api/groups/abandoned/: the groups no client has run for a while."""

from __future__ import annotations

import time

from django import forms
from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..identity import api_view, console_page, scope_of, visible_clusters
from ..jobs.redis_client import get_redis
from ..web.errors import bad_request, json_error
from ..web.inputs import AsciiIntegerField
from .abandoned import abandoned_groups


class AbandonedForm(forms.Form):
    days = AsciiIntegerField(required=False, min_value=0, max_value=3650,
                             help_text=gettext_lazy("no client online for at least this many days"))  # fmt: skip
    cluster = forms.CharField(required=False, max_length=64)

    def days_or_default(self) -> int:
        days = self.cleaned_data["days"]
        return settings.ABANDONED_AFTER_DAYS if days is None else days


def _found(request):
    form = AbandonedForm(request.GET)
    if not form.is_valid():
        return form, None
    clusters = visible_clusters(request)
    if form.cleaned_data["cluster"]:
        clusters = [c for c in clusters if c.name == form.cleaned_data["cluster"]]
    rows = abandoned_groups(get_redis(), clusters, scope_of(request.user), days=form.days_or_default(), now=time.time())
    return form, rows


@console_page
def abandoned_page(request):
    form, rows = _found(request)
    if rows is None:
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.errors.as_text()})
    context = {"form": form, "rows": rows, "days": form.days_or_default(), "nav": "groups"}
    return render(request, "lifecycle/abandoned.html", context)


@api_view
def abandoned_api(request):
    form, rows = _found(request)
    if rows is None:
        return json_error(400, "invalid filter", fields=form.errors.get_json_data())
    return JsonResponse({"days": form.days_or_default(), "groups": [r.to_wire() for r in rows]})
