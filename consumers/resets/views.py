"""The reset form on a group: the preview updates as the strategy changes (htmx), and posting
it creates a change request that waits for an approver."""

from __future__ import annotations

import time

import redis as redis_py
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _

from ..changes.guards import Actor, ChangeRefused
from ..identity import cluster_or_404, console_action, console_page, remote_addr, scope_of
from ..jobs.redis_client import get_redis
from ..live import selectors, snapshots
from ..live.forecast import after_reset
from ..rocketmq import RocketMQError
from . import services
from .forms import ResetForm
from .strategies import InvalidReset, validate_params

# What the preview box asks for while a strategy's own input is still empty: answered 200, so
# the box shows it (htmx swaps only 2xx by default, and with DEBUG on django-htmx's script
# replaces the whole document with a 4xx answer to an htmx request)
PROMPTS = {
    "time": ("timestamp", _("Choose a time: the preview shows each queue's first message at or after it.")),
    "shift": ("shift", _("Enter N: negative replays N messages per queue, positive skips N.")),
    "copy": ("source_group", _("Enter the group to copy the offsets from.")),
    "exact": ("offsets", _("Enter the offsets, one queue per line: topic@broker#queue offset.")),
}


def _form(request, cluster, group: str, data=None) -> ResetForm:
    view = selectors.group_detail(get_redis(), cluster, group)
    return ResetForm(data, topics=view.doc.topics if view else [])


@console_page
def reset_form(request, cluster: str, group: str):
    cluster = cluster_or_404(request, cluster, group)
    form = _form(request, cluster, group)
    form.fields["strategy"].initial = "time"  # the first choice; its preview asks for the time
    context = {"cluster": cluster, "group": group, "form": form, "nav": "groups"}
    return render(request, "resets/form.html", context)


@console_page
def reset_preview(request, cluster: str, group: str):
    """The preview table for the strategy and parameters in the query string (a fragment).
    Input that makes no reset yet (empty, or refused) is answered 200 with the prompt or the
    message in the box; only a broker that cannot be read is an error status (502)."""
    cluster = cluster_or_404(request, cluster, group)
    form = _form(request, cluster, group, request.GET)
    context = {"cluster": cluster, "group": group}
    if not form.is_valid():
        return render(request, "resets/_preview.html", {**context, "error": form.errors.as_text()})
    prompt = PROMPTS.get(form.cleaned_data["strategy"])
    if prompt and form.cleaned_data[prompt[0]] in (None, "", {}):
        return render(request, "resets/_preview.html", {**context, "prompt": prompt[1]})
    try:
        params = form.params()
        validate_params(params, now_ms=int(time.time() * 1000))  # refused here, before the broker is read
        source = params.get("source_group")
        if source and not scope_of(request.user).sees_group(cluster.name, source):
            # as for a group that is not there
            raise InvalidReset(_("no group %(group)s in %(cluster)s") % {"group": source, "cluster": cluster.name})
        plan = services.preview(cluster, group, params)
    except InvalidReset as exc:
        return render(request, "resets/_preview.html", {**context, "error": str(exc)})
    except RocketMQError as exc:
        return render(
            request, "resets/_preview.html", {**context, "error": _("broker: %(error)s") % {"error": exc}}, status=502
        )
    return render(request, "resets/_preview.html", {**context, "plan": plan, "after": _after(cluster, group, plan)})


def _after(cluster, group: str, plan: dict) -> dict | None:
    """The drain forecast if the plan ran now, from the rates of the group's last poll (None
    without one)."""
    try:
        doc = snapshots.read_detail(get_redis(), cluster.pk, group)
    except redis_py.RedisError:  # the preview stands without it
        return None
    return after_reset(plan["rows"], doc.drain_queues) if doc is not None else None


@console_action
def reset_create(request, cluster: str, group: str):
    cluster = cluster_or_404(request, cluster, group)
    form = _form(request, cluster, group, request.POST)
    context = {"cluster": cluster, "group": group, "form": form, "nav": "groups"}
    if not form.is_valid():
        return render(request, "resets/form.html", context, status=400)
    try:
        change = services.request_reset(
            actor=Actor(request.user, remote_addr(request)),
            cluster=cluster,
            group=group,
            params=form.params(),
            reason=form.cleaned_data["reason"],
        )
    except (InvalidReset, ChangeRefused) as exc:
        form.add_error(None, str(exc))
        return render(request, "resets/form.html", context, status=getattr(exc, "status", 400))
    except RocketMQError as exc:
        form.add_error(None, _("the broker could not be read: %(error)s") % {"error": exc})
        return render(request, "resets/form.html", context, status=502)
    return redirect("consumers:change-detail", change.pk)
