"""Message pages: Find (by id, key, position or time range), one message, and its track
through every group. Every role sees metadata; bodies only those who may read them
(operators and admins: identity/bodies.py)."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _

from ..dlq.browse import body_views
from ..identity import cluster_or_404, console_page, may_read_bodies, scope_of, visible_clusters
from ..rocketmq import RocketMQError
from ..web.inputs import encode_cursor, text_problem
from . import lookup, services
from .forms import MAX_OFFSET, TOPIC_NAME, FindForm
from .verdicts import LABELS


@console_page
def find_messages(request):
    form = FindForm(request.GET or None, cluster_names=sorted(c.name for c in visible_clusters(request)))
    context = {"form": form, "nav": "messages"}
    if not request.GET:
        return render(request, "messages/find.html", context)
    if not form.is_valid():
        return render(request, "messages/find.html", {**context, "error": form.error_text()}, status=400)
    cluster = cluster_or_404(request, form.cleaned_data["cluster"])
    try:
        result = services.find(cluster, form.search(), scope_of(request.user))
    except services.NoSuchTopic as exc:
        return render(request, "messages/find.html", {**context, "error": str(exc)}, status=404)
    except RocketMQError as exc:
        return render(request, "messages/find.html", {**context, "error": _unreadable_text(exc)}, status=502)
    found = result.found or result.page
    context.update(
        cluster=cluster, result=result, rows=[lookup.row(f) for f in found.messages], problems=found.problems
    )
    if result.page and result.page.more:
        query = request.GET.copy()
        query["cursor"] = encode_cursor(result.page.cursor)
        context["next_query"] = query.urlencode()
    return render(request, "messages/find.html", context)


def locate(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    """The cluster and the message at this position, or 404 saying why (a topic outside the
    user's scope as one that is not there)."""
    if not TOPIC_NAME.fullmatch(topic) or text_problem(broker) or queue_id > 65535 or offset > MAX_OFFSET:
        raise Http404(_("no message can be at this position: check the topic, broker, queue and offset"))
    found = cluster_or_404(request, cluster)
    try:
        return found, services.message(found, topic, broker, queue_id, offset, scope_of(request.user))
    except (services.MessageNotFound, services.NoSuchTopic) as exc:
        raise Http404(str(exc)) from None


@console_page
def message_detail(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    try:
        cluster, found = locate(request, cluster, topic, broker, queue_id, offset)
    except RocketMQError as exc:
        return _unreadable(request, exc, "messages/message.html")
    context = {
        "cluster": cluster, "m": lookup.detail(found), "nav": "messages",
        "body": body_views(found.message) if may_read_bodies(request.user, cluster.name, topic=topic) else None,
    }  # fmt: skip
    return render(request, "messages/message.html", context)


@console_page
def message_track(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    try:
        cluster, found = locate(request, cluster, topic, broker, queue_id, offset)
        tracking = services.track_message(cluster, found, scope_of(request.user))
    except RocketMQError as exc:
        return _unreadable(request, exc, "messages/_track.html" if request.htmx else "messages/track.html")
    context = {"cluster": cluster, "m": lookup.row(found), "tracking": tracking, "labels": LABELS,
               "nav": "messages"}  # fmt: skip
    return render(request, "messages/_track.html" if request.htmx else "messages/track.html", context)


def _unreadable(request, exc: RocketMQError, template: str):
    return render(request, template, {"error": _unreadable_text(exc), "nav": "messages"}, status=502)


def _unreadable_text(exc: RocketMQError) -> str:
    return _("the cluster could not be read: %(error)s") % {"error": f"{type(exc).__name__}: {exc}"}
