from collections import Counter

from django.shortcuts import render

from .. import selectors
from ..health import SEVERITY
from ..models import Cluster
from ..redis_client import get_redis
from .common import console_page


@console_page
def home(request):
    redis = get_redis()
    clusters = list(Cluster.objects.all())
    states = selectors.cluster_states(redis, clusters)
    page = selectors.group_page(redis, clusters=clusters, sort="lag", per_page=10)
    everything = selectors.group_page(redis, clusters=clusters, sort="health", descending=False, per_page=10**6)
    counts = Counter(row.health for row in everything.rows)
    context = {
        "states": states,
        "top": page.rows,
        "health_counts": [(state, counts[state]) for state in SEVERITY if counts[state]],
        "total": everything.total,
        "nav": "home",
    }
    return render(request, "consumers/home.html", context)
