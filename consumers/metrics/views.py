"""GET /metrics: the Prometheus scrape endpoint. Who: an API token (`authorization:` in the
scrape config) or a session with a console role, like /api/; or, without credentials, a
scraper whose address is in METRICS_ALLOWED_NETWORKS."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db.models import Count
from django.http import HttpResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from ..audit.models import AuditEvent
from ..changes.models import ChangeRequest
from ..dlq.models import RedriveJob
from ..identity import EVERYTHING, Scope, api_view, scope_of, within
from ..jobs.redis_client import get_redis
from ..live import selectors, snapshots
from ..models import Cluster
from .exposition import Snapshot, capture_families, cluster_families, group_text, job_families

# the text format every Prometheus 2.x reads (our names need nothing of the newer one)
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


def exposition(scope: Scope = EVERYTHING, within=None) -> bytes:
    """Every metric, of the groups `scope` sees (a scoped token's scrape: its groups, their
    clusters with only their groups counted, their requests and redrives; `within`: the same
    scope as identity's database filter)."""
    redis = get_redis()
    clusters = [c for c in Cluster.objects.order_by("name") if scope.everything or scope.sees_cluster(c.name)]
    states = selectors.cluster_states(redis, clusters, scope)
    rows = selectors.with_summaries(
        redis, selectors.group_rows(redis, clusters, {s.cluster.pk: s.meta for s in states}, scope)
    )
    per_queue = None
    if settings.METRICS_PER_QUEUE:
        per_queue = {
            (c.name, group): doc.queues
            for c in clusters
            for group, doc in snapshots.read_details(redis, c.pk).items()
            if scope.sees_group(c.name, group)
        }
    changes = _only(ChangeRequest.objects, within).values_list("kind", "state").annotate(n=Count("id"))
    redrives = _only(RedriveJob.objects, within).values_list("state").annotate(n=Count("id"))
    captured = AuditEvent.objects.filter(action="capture_stacks").values_list("cluster", "group")
    captured = captured.annotate(n=Count("id"))
    captures = {(c, g): n for c, g, n in captured if scope.sees_group(c, g)}
    registry = CollectorRegistry(auto_describe=False)
    families = [
        *cluster_families(states),
        *job_families({(kind, state): n for kind, state, n in changes}, dict(redrives)),
        *capture_families(captures),
    ]
    registry.register(Snapshot(families))
    return group_text(rows, per_queue=per_queue).encode() + generate_latest(registry)


def _only(found, within):
    return found if within is None else found.filter(within)


@api_view
def _for_user(request):
    body = exposition(scope_of(request.user), within(request.user))
    return HttpResponse(body, content_type=CONTENT_TYPE)


def _allowed_address(request) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net, strict=False) for net in settings.METRICS_ALLOWED_NETWORKS)


@login_not_required
def metrics(request):
    if request.method in ("GET", "HEAD") and "Authorization" not in request.headers and _allowed_address(request):
        return HttpResponse(exposition(), content_type=CONTENT_TYPE)
    return _for_user(request)
