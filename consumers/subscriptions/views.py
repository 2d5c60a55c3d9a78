"""A group's subscription config page (each broker's values, the fields they differ on) and the
requests it makes: a change of fields, or a pause or resume of consumption."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from ..changes.guards import Actor
from ..changes.pages import submit_from
from ..identity import api_view, cluster_or_404, console_action, console_page, remote_addr, scope_of, visible_clusters
from ..jobs.redis_client import get_redis
from ..live import snapshots
from ..rocketmq import RocketMQError
from ..web.errors import json_error
from . import modes, services
from .forms import ConfigForm, ModeForm, PauseForm


def _page(request, cluster, group: str, *, form=None, pause=None, mode=None, status=200, read=True):
    """The page; `read=False` after a refusal or a failed request: the forms and what went wrong,
    without reading the broker again (a refusal comes before any broker read)."""
    context = {
        "cluster": cluster,
        "group": group,
        "nav": "groups",
        "form": form or ConfigForm(),
        "pause": pause or PauseForm(prefix="pause"),
        "mode_form": mode or ModeForm(prefix="mode"),
        "emergency_allowed": settings.CHANGES_EMERGENCY_PAUSE,
    }
    if not read:
        return render(request, "subscriptions/config.html", context, status=status)
    try:
        brokers = services.read(cluster, group)
        context["config"] = services.table(brokers)
        doc = snapshots.read_detail(get_redis(), cluster.pk, group)
        context["modes"] = services.request_modes(brokers, list(doc.topics) if doc else [])
    except RocketMQError as exc:
        context["error"] = _("the cluster could not be read: %(error)s") % {"error": f"{type(exc).__name__}: {exc}"}
        status = max(status, 502)
    return render(request, "subscriptions/config.html", context, status=status)


@console_page
def config_page(request, cluster: str, group: str):
    return _page(request, cluster_or_404(request, cluster, group), group)


@console_action
def config_create(request, cluster: str, group: str):
    found = cluster_or_404(request, cluster, group)
    if "pause-action" in request.POST:  # the pause or resume form (its fields prefixed: both ask why)
        form, keyword = PauseForm(request.POST, prefix="pause"), "pause"
    else:
        form, keyword = ConfigForm(request.POST), "form"
    if not form.is_valid():
        return _page(request, found, group, **{keyword: form}, status=400, read=False)
    data = form.cleaned_data
    if keyword == "pause":
        values = services.PAUSE if data["action"] == "pause" else services.RESUME
    else:
        values = form.values()
    return submit_from(
        form,
        lambda: services.request_change(actor=Actor(request.user, remote_addr(request)), cluster=found, group=group,
                                        values=values, reason=data["reason"], emergency=bool(data.get("emergency"))),
        lambda status: _page(request, found, group, **{keyword: form}, status=status, read=False),
    )  # fmt: skip


@console_action
def mode_create(request, cluster: str, group: str):
    found = cluster_or_404(request, cluster, group)
    form = ModeForm(request.POST, prefix="mode")
    if not form.is_valid():
        return _page(request, found, group, mode=form, status=400, read=False)
    data = form.cleaned_data
    return submit_from(
        form,
        lambda: modes.request_mode(actor=Actor(request.user, remote_addr(request)), cluster=found, group=group,
                                   topic=data["topic"], mode=data["mode"], share=data["share"], reason=data["reason"]),
        lambda status: _page(request, found, group, mode=form, status=status, read=False),
    )  # fmt: skip


@api_view
def config_api(request, cluster: str, group: str):
    """GET /api/groups/<cluster>/<group>/config/: each broker's config of the group, as the page."""
    found = next((c for c in visible_clusters(request) if c.name == cluster), None)
    if found is None or not scope_of(request.user).sees_group(cluster, group):
        return json_error(404, f"no group {group!r} on {cluster!r}")
    try:
        table = services.table(services.read(found, group))
    except RocketMQError as exc:
        return json_error(502, f"the cluster could not be read: {type(exc).__name__}: {exc}")
    return JsonResponse({"cluster": found.name, "group": group, **table})
