"""/api/messages/: Find, one message and its track as JSON, with the pages' rules (metadata for
every role; a body only for those who may read bodies, otherwise null and why)."""

from __future__ import annotations

import base64
import dataclasses

from django.http import Http404, JsonResponse

from ..identity import api_view, may_read_bodies, scope_of, visible_cluster, visible_clusters
from ..rocketmq import RocketMQError
from ..web.errors import json_error
from ..web.inputs import encode_cursor
from . import lookup, services
from .forms import FindForm
from .views import locate

BODY_HIDDEN = "message bodies are for operators only"


@api_view
def find(request):
    form = FindForm(request.GET, strict=True, cluster_names=sorted(c.name for c in visible_clusters(request)))
    if not form.is_valid():
        return json_error(400, f"invalid search: {form.error_text()}", fields=form.errors.get_json_data())
    cluster = visible_cluster(request, form.cleaned_data["cluster"])
    if cluster is None:
        return json_error(404, f"no cluster named {form.cleaned_data['cluster']!r}")
    try:
        result = services.find(cluster, form.search(), scope_of(request.user))
    except services.NoSuchTopic as exc:
        return json_error(404, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the cluster could not be read: {type(exc).__name__}: {exc}")
    if result.page is not None:
        page = result.page
        return JsonResponse({
            "messages": [lookup.row(f) for f in page.messages], "total_in_range": page.total,
            "problems": page.problems, "next_cursor": encode_cursor(page.cursor) if page.more else None,
        })  # fmt: skip
    found = result.found
    return JsonResponse({"how": found.how, "messages": [lookup.row(f) for f in found.messages],
                         "problems": found.problems, "note": found.note})  # fmt: skip


def _position(request, cluster, topic, broker, queue_id, offset):
    """(cluster, message) or a JSON error response."""
    try:
        return locate(request, cluster, topic, broker, queue_id, offset), None
    except Http404 as exc:
        return None, json_error(404, str(exc))
    except RocketMQError as exc:
        return None, json_error(502, f"the cluster could not be read: {type(exc).__name__}: {exc}")


@api_view
def message(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    located, error = _position(request, cluster, topic, broker, queue_id, offset)
    if error:
        return error
    found_cluster, found = located
    data = lookup.detail(found)
    if may_read_bodies(request.user, found_cluster.name, topic=topic):
        data["body_base64"] = base64.b64encode(found.message.body).decode()
    else:
        data["body_base64"], data["body_hidden"] = None, BODY_HIDDEN
    return JsonResponse(data)


@api_view
def track(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    located, error = _position(request, cluster, topic, broker, queue_id, offset)
    if error:
        return error
    found_cluster, found = located
    try:
        tracking = services.track_message(found_cluster, found, scope_of(request.user))
    except RocketMQError as exc:
        return json_error(502, f"the cluster could not be read: {type(exc).__name__}: {exc}")
    groups = [{**dataclasses.asdict(g), "label": g.label} for g in tracking.groups]
    trace = dataclasses.asdict(tracking.trace) if tracking.trace is not None else None
    return JsonResponse({"message": lookup.row(found), "groups": groups, "problems": tracking.problems,
                         "read_at": tracking.read_at, "trace": trace})  # fmt: skip
