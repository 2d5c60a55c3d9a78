"""Skip this message…: the pinned message (metadata; the body for those who may read bodies)
with the group's committed offset there, and the form that requests the skip."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from ..changes.guards import Actor, ChangeRefused
from ..dlq.browse import body_views
from ..identity import cluster_or_404, console_action, console_page, may_read_bodies, remote_addr
from ..messages import lookup
from ..messages.views import locate
from ..resets.strategies import InvalidReset
from ..rocketmq import RocketMQError
from . import services
from .forms import SkipForm


def _page(request, cluster, group: str, at: services.Position, form, *, status=200, read=True):
    """The page; `read=False` after a refusal or a failed request: the form and what went wrong,
    without reading the broker again (a refusal comes before any broker read)."""
    context = {"cluster": cluster, "group": group, "at": at, "form": form, "nav": "groups",
               "max_messages": services.MAX_MESSAGES}  # fmt: skip
    if not read:
        return render(request, "skips/form.html", context, status=status)
    try:
        _cluster, found = locate(request, cluster.name, at.topic, at.broker, at.queue_id, at.offset)
    except RocketMQError as exc:
        error = _("the cluster could not be read: %(error)s") % {"error": f"{type(exc).__name__}: {exc}"}
        return render(request, "skips/form.html", {**context, "error": error}, status=502)
    context.update(
        m=lookup.detail(found),
        body=body_views(found.message) if may_read_bodies(request.user, cluster.name, topic=at.topic) else None,
    )
    return render(request, "skips/form.html", context, status=status)


@console_page
def skip_form(request, cluster: str, group: str, topic: str, broker: str, queue_id: int, offset: int):
    known = cluster_or_404(request, cluster, group)  # the group within the user's scope, as everywhere
    return _page(request, known, group, services.Position(topic, broker, queue_id, offset), SkipForm())


@console_action
def skip_create(request, cluster: str, group: str, topic: str, broker: str, queue_id: int, offset: int):
    found = cluster_or_404(request, cluster, group)
    at = services.Position(topic, broker, queue_id, offset)
    form = SkipForm(request.POST)
    if not form.is_valid():
        return _page(request, found, group, at, form, status=400, read=False)
    data = form.cleaned_data
    try:
        change = services.request_skip(
            actor=Actor(request.user, remote_addr(request)), cluster=found, group=group,
            at=at, count=data["count"],
            copy_to_dlq=data["copy_to_dlq"], reason=data["reason"],
        )  # fmt: skip
    except (InvalidReset, ChangeRefused) as exc:
        form.add_error(None, str(exc))
        return _page(request, found, group, at, form, status=getattr(exc, "status", 400), read=False)
    except RocketMQError as exc:
        form.add_error(None, _("the broker could not be read: %(error)s") % {"error": exc})
        return _page(request, found, group, at, form, status=502, read=False)
    return redirect("consumers:change-detail", change.pk)
