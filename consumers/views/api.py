"""/api/: the pages' data as JSON, for scripts."""

from django.http import Http404, JsonResponse

from .. import selectors
from ..forms import GroupFilterForm
from ..models import Cluster
from ..redis_client import get_redis
from .common import api_view, cluster_or_404


@api_view
def clusters(request):
    states = selectors.cluster_states(get_redis())
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
                    "last_poll": s.meta,
                }
                for s in states
            ]
        }
    )


@api_view
def groups(request):
    clusters = list(Cluster.objects.all())
    form = GroupFilterForm(request.GET, cluster_names=[c.name for c in clusters])
    if not form.is_valid():
        return JsonResponse({"error": form.errors.get_json_data()}, status=400)
    page = selectors.group_page(get_redis(), clusters=clusters, **form.selector_arguments())
    return JsonResponse(
        {
            "total": page.total,
            "page": page.page,
            "pages": page.pages,
            "groups": [{"cluster": r.cluster.name, "age_seconds": r.age, **r.summary} for r in page.rows],
        }
    )


@api_view
def group(request, cluster: str, group: str):
    cluster = cluster_or_404(cluster)
    detail, state = selectors.group_detail(get_redis(), cluster, group)
    if detail is None:
        raise Http404
    return JsonResponse(
        {"cluster": cluster.name, "age_seconds": state.now - detail["as_of"] if detail["as_of"] else None, **detail}
    )
