"""The live view's pages: overview, clusters, groups, one group and its lag chart. Each view
validates its input, calls one selector and renders; htmx requests get the fragment."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from ..identity import cluster_or_404, console_page, scope_of, visible_clusters
from ..jobs.redis_client import get_redis
from ..stats.forms import PRESETS, PeriodForm
from ..web.errors import bad_request
from . import selectors
from .forms import AllocationChartForm, GroupFilterForm, LagChartForm


@console_page
def home(request):
    overview = selectors.overview(get_redis(), visible_clusters(request), scope=scope_of(request.user))
    context = {"states": overview.states, "top": overview.top, "health_counts": overview.health_counts}
    return render(request, "consumers/home.html", {**context, "total": overview.total, "nav": "home"})


@console_page
def cluster_list(request):
    states = selectors.cluster_states(get_redis(), visible_clusters(request), scope_of(request.user))
    template = "consumers/partials/_clusters_table.html" if request.htmx else "consumers/clusters.html"
    return render(request, template, {"states": states, "nav": "clusters"})


@console_page
def group_list(request):
    clusters = visible_clusters(request)
    form = GroupFilterForm(request.GET, cluster_names=[c.name for c in clusters])
    if not form.is_valid():
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.error_text()})
    if form.cleaned_data["cursor"] or form.cleaned_data["limit"]:
        return bad_request(request, _("cursor and limit are for /api/groups/; this page goes by page"))
    arguments = form.selector_arguments()
    page = selectors.group_page(get_redis(), clusters=clusters, scope=scope_of(request.user), **arguments)
    without_page = request.GET.copy()
    without_page.pop("page", None)
    context = {
        "page": page,
        "form": form,
        "nav": "groups",
        "query": without_page.urlencode(),  # for the pager
        "refresh_query": request.GET.urlencode(),  # the table refreshes the page it shows
    }
    template = "consumers/partials/_groups_table.html" if request.htmx else "consumers/groups.html"
    return render(request, template, context)


@console_page
def group_detail(request, cluster: str, group: str):
    cluster = cluster_or_404(request, cluster, group)
    view = selectors.group_detail(get_redis(), cluster, group)
    if view is None:
        awaiting = selectors.awaiting_poll(get_redis(), cluster)
        if awaiting:
            return awaiting_poll_page(request, cluster, awaiting)
        raise Http404(
            _("No group %(group)s in the last snapshot of %(cluster)s") % {"group": group, "cluster": cluster}
        )
    # the template gets the wire form: Django's template lookups try item access first, and on
    # a dataclass every failed try costs an exception (about 1 ms on a 64-queue page)
    context = {"cluster": cluster, "group": group, "doc": view.doc.to_wire(), "state": view.state, "age": view.age}
    if request.htmx:
        return render(request, "consumers/partials/_group_state.html", context)
    period = PeriodForm(request.GET)  # the statistics section's period (its charts load separately)
    if not period.is_valid():
        return bad_request(request, _("Invalid period: %(errors)s") % {"errors": period.errors.as_text()})
    statistics = {"period_form": period, "period_presets": PRESETS, "period_query": request.GET.urlencode()}
    extra = {"nav": "groups", "rebalance_changes": settings.HEALTH_REBALANCE_CHANGES}
    return render(request, "consumers/group_detail.html", {**context, **statistics, **extra})


def awaiting_poll_page(request, cluster, message: str):
    """503 with Retry-After: the data comes back by itself within two polls, and the page
    reloads itself until then (never a 404 for a group that is there)."""
    context = {"cluster": cluster, "message": message, "retry_after": cluster.poll_interval, "nav": "groups"}
    response = render(request, "consumers/awaiting_poll.html", context, status=503)
    response["Retry-After"] = str(cluster.poll_interval)
    return response


def _history_chart(request, cluster: str, group: str, form_class, build, default_hours: int):
    """A chart of the group's history as JSON: the hours checked, the figure built by `build`."""
    cluster = cluster_or_404(request, cluster, group)
    form = form_class(request.GET)
    if not form.is_valid():
        return JsonResponse({"error": form.errors.get_json_data()}, status=400)
    return JsonResponse(build(cluster, hours=form.cleaned_data["hours"] or default_hours), safe=False)


@console_page
def group_lag_chart(request, cluster: str, group: str):
    build = lambda c, hours: selectors.lag_chart(c, group, hours=hours)  # noqa: E731
    return _history_chart(request, cluster, group, LagChartForm, build, 6)


@console_page
def group_allocation_chart(request, cluster: str, group: str):
    build = lambda c, hours: selectors.allocation_chart(c, group, hours=hours)  # noqa: E731
    return _history_chart(request, cluster, group, AllocationChartForm, build, 24)
