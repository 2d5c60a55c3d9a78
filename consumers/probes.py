"""Probes for load balancers and orchestrators, unauthenticated, JSON.

- /healthz: the process answers (nothing else is asked: a liveness probe that failed on Redis
  or the database would restart every web process during their outage, for nothing).
- /readyz: the database and Redis answer, and every enabled cluster was polled within its
  staleness bound (a poll that failed still counts: it shows the workers are working). 503
  when any is not so. The body says what failed in counts, never a cluster's name or address:
  anyone may call it.
"""

from __future__ import annotations

import time

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from .live import snapshots
from .live.config import stale_after
from .models import Cluster
from .redis_client import UNAVAILABLE, get_redis


def _plain(data: dict, status: int = 200) -> JsonResponse:
    response = JsonResponse(data, status=status)
    response["Cache-Control"] = "no-store"
    return response


@login_not_required
@require_GET
def healthz(request):
    return _plain({"status": "ok"})


@login_not_required
@require_GET
def readyz(request):
    checks = {"database": _database(), "redis": _redis()}
    polls = _polls() if checks["database"] == "ok" and checks["redis"] == "ok" else None
    if polls is not None:
        checks["polls"] = "ok" if not polls["late"] else "late"
    ready = all(value == "ok" for value in checks.values())
    body = {"status": "ready" if ready else "not ready", "checks": checks}
    if polls is not None:
        body["clusters"] = polls
    return _plain(body, 200 if ready else 503)


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception:
        return "failed"


def _redis() -> str:
    try:
        get_redis().ping()
        return "ok"
    except UNAVAILABLE:
        return "failed"


def _polls() -> dict:
    """How many enabled clusters were polled in time, late, or never (none of them named)."""
    clusters = list(Cluster.objects.filter(enabled=True))
    metas = snapshots.read_metas(get_redis(), [c.pk for c in clusters])
    now, counts = time.time(), {"polled": 0, "late": 0, "never": 0}
    for cluster in clusters:
        meta = metas.get(cluster.pk)
        if meta is None:
            counts["never"] += 1
        elif now - meta.polled_at > stale_after(cluster.poll_interval, meta.groups):
            counts["late"] += 1
        else:
            counts["polled"] += 1
    return counts
