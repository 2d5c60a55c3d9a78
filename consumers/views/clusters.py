from django.shortcuts import render

from .. import selectors
from ..redis_client import get_redis
from .common import console_page


@console_page
def cluster_list(request):
    states = selectors.cluster_states(get_redis())
    template = "consumers/partials/_clusters_table.html" if request.htmx else "consumers/clusters.html"
    return render(request, template, {"states": states, "nav": "clusters"})
