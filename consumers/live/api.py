"""/api/: the live view's data as JSON, for scripts. Same selectors as the pages, so `stale`,
`stale_reason`, `age_seconds` and health agree with what the pages show."""

from __future__ import annotations

from django.http import JsonResponse

from ..identity import api_view, scope_of, visible_clusters
from ..jobs.redis_client import get_redis
from ..web.errors import json_error
from . import selectors
from .forms import AllocationChartForm, GroupFilterForm


@api_view
def clusters(request):
    scope = scope_of(request.user)
    states = selectors.cluster_states(get_redis(), visible_clusters(request), scope)
    # a scoped user is told about their own groups only: no cluster-wide counts
    poll = (lambda meta: meta.to_wire()) if scope.everything else (lambda meta: None)
    return JsonResponse(
        {
            "clusters": [
                {
                    "name": s.cluster.name,
                    "namesrv": s.cluster.namesrv_list,
                    "read_only": s.cluster.read_only,
                    "poll_interval": s.cluster.poll_interval,
                    "state": s.state,
                    "polled_age_seconds": s.polled_age,
                    "data_age_seconds": s.data_age,
                    "groups": s.groups,
                    "last_poll": poll(s.meta) if s.meta else None,
                }
                for s in states
            ]
        }
    )


@api_view
def groups(request):
    clusters = visible_clusters(request)
    form = GroupFilterForm(request.GET, cluster_names=[c.name for c in clusters])
    if not form.is_valid():
        return json_error(400, f"invalid filter: {form.error_text()}", fields=form.errors.get_json_data())
    arguments = form.selector_arguments()
    page = selectors.group_page(get_redis(), clusters=clusters, scope=scope_of(request.user), **arguments)
    return JsonResponse(
        {
            "total": page.total,
            "page": page.page or None,  # None when asked by cursor
            "pages": page.pages,
            "next_cursor": form.encode_cursor(page.next_cursor),
            "groups": [{"cluster": r.cluster.name, "age_seconds": r.age, **r.summary} for r in page.rows],
        }
    )


@api_view
def group(request, cluster: str, group: str):
    found = next((c for c in visible_clusters(request) if c.name == cluster), None)
    if found is None:
        return json_error(404, f"no cluster named {cluster!r}")
    if not scope_of(request.user).sees_group(cluster, group):
        return json_error(404, f"no group {group!r} in the last snapshot of {cluster}")
    view = selectors.group_detail(get_redis(), found, group)
    if view is None:
        awaiting = selectors.awaiting_poll(get_redis(), found)
        if awaiting:
            response = json_error(503, awaiting)
            response["Retry-After"] = str(found.poll_interval)
            return response
        return json_error(404, f"no group {group!r} in the last snapshot of {cluster}")
    return JsonResponse({"cluster": found.name, "age_seconds": view.age, **view.doc.to_wire()})


@api_view
def allocation(request, cluster: str, group: str):
    """GET /api/groups/<cluster>/<group>/allocation/?hours=: who held each queue when, from the
    history: every change of hands (a queue released has `to` null), the polls judged, the clients."""
    found = next((c for c in visible_clusters(request) if c.name == cluster), None)
    if found is None or not scope_of(request.user).sees_group(cluster, group):
        return json_error(404, f"no group {group!r} in a cluster named {cluster!r}")
    form = AllocationChartForm(request.GET)
    if not form.is_valid():
        return json_error(400, "invalid hours", fields=form.errors.get_json_data())
    hours = form.cleaned_data["hours"] or 24
    found_timeline = selectors.allocation_timeline(found, group, hours=hours)
    changes = [
        {"at": c.at.isoformat(), "queue": c.queue, "from": c.before, "to": c.after} for c in found_timeline.changes
    ]
    return JsonResponse({"cluster": cluster, "group": group, "hours": hours, "polls": found_timeline.polls,
                         "clients": found_timeline.clients, "changes": changes})  # fmt: skip
