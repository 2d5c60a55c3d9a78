"""POST /api/groups/<cluster>/<group>/reset/preview/: what a reset would do now, as JSON, without
requesting it (the page's preview for scripts and agents). A read: nothing is written, so a
viewer may ask; requesting the reset is POST /api/changes/, with the same params."""

from __future__ import annotations

import time

from django.http import JsonResponse

from ..identity import api_view, scope_of, visible_clusters
from ..rocketmq import RocketMQError
from ..web.errors import json_error
from . import services
from .kind import API_PARAMS
from .strategies import InvalidReset, validate_params


@api_view(methods=("POST",), body=API_PARAMS)
def reset_preview(request, cluster: str, group: str):
    found = next((c for c in visible_clusters(request) if c.name == cluster), None)
    if found is None:
        return json_error(404, f"no cluster named {cluster!r}")
    scope = scope_of(request.user)
    if not scope.sees_group(cluster, group):
        return json_error(404, f"no group {group!r} in {cluster}")
    params = request.json
    source = params.get("source_group")
    if source and not scope.sees_group(cluster, source):  # as for a group that is not there
        return json_error(400, f"no group {source!r} in {cluster}", field="body.source_group")
    try:
        validate_params(params, now_ms=int(time.time() * 1000))  # refused before the broker is read
        plan = services.preview(found, group, params)
    except InvalidReset as exc:
        return json_error(400, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse({"cluster": found.name, "group": group, "plan": plan})
