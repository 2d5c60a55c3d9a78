import datetime as dt

from django.http import Http404, JsonResponse
from django.shortcuts import render

from .. import charts, selectors
from ..forms import GroupFilterForm, LagChartForm
from ..models import Cluster
from ..redis_client import get_redis
from ..services.polling import history_store
from .common import bad_request, cluster_or_404, console_page


@console_page
def group_list(request):
    clusters = list(Cluster.objects.all())
    form = GroupFilterForm(request.GET, cluster_names=[c.name for c in clusters])
    if not form.is_valid():
        return bad_request(request, f"Invalid filter: {form.error_text()}")
    page = selectors.group_page(get_redis(), clusters=clusters, **form.selector_arguments())
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
    cluster = cluster_or_404(cluster)
    detail, state = selectors.group_detail(get_redis(), cluster, group)
    if detail is None:
        raise Http404(f"No group {group} in the last snapshot of {cluster}")
    age = state.now - detail["as_of"] if detail["as_of"] else None
    context = {"cluster": cluster, "group": group, "doc": detail, "state": state, "nav": "groups", "age": age}
    template = "consumers/partials/_group_state.html" if request.htmx else "consumers/group_detail.html"
    return render(request, template, context)


@console_page
def group_lag_chart(request, cluster: str, group: str):
    cluster = cluster_or_404(cluster)
    form = LagChartForm(request.GET)
    if not form.is_valid():
        return JsonResponse({"error": form.errors.get_json_data()}, status=400)
    hours = form.cleaned_data["hours"] or 6
    since = dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours)
    history = history_store().read("group_stats", cluster.name, group=group, since=since)
    return JsonResponse(charts.lag_figure(history, group=group, hours=hours), safe=False)
