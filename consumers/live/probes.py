"""Probes for load balancers and orchestrators, unauthenticated, JSON.

- /healthz: the process answers (nothing else is asked: a liveness probe that failed on Redis
  or the database would restart every web process during their outage, for nothing). It says
  what this process already knows, without failing for it: a database outage it saw.
- /readyz: the database and Redis answer, and every enabled cluster was polled within its
  staleness bound and after Redis last came back (a poll that failed still counts: it shows the
  workers are working). 503 when any is not so. The body says what failed in counts, never a
  cluster's name or address: anyone may call it.

Both are answered by ProbeMiddleware, first of all middleware: an orchestrator asks by the
pod's address (not in ALLOWED_HOSTS: Django would answer 400) over plain HTTP (the HTTPS redirect
would answer 301, which Kubernetes counts as success even when the console is not ready).
"""

from __future__ import annotations

import threading
import time

import redis as redis_py
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from ..jobs import redis_client
from ..jobs.redis_client import UNAVAILABLE, get_redis
from ..models import Cluster, KnownBroker
from ..web.errors import database_outage, database_unavailable_cause, note_database_answered, note_database_unavailable
from . import snapshots
from .config import stale_after

# When a web process saw Redis come back after failing (seconds since the epoch), for every
# process to read: an outage that restarted nothing (the network, a hung or paused server)
# leaves no trace in Redis itself. Kept a day: by then every cluster has been polled since.
RETURNED_KEY = "rmqc:redis:returned-at"
RETURNED_TTL = 86400


class ProbeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.probes = {"/healthz": healthz, "/readyz": readyz}

    def __call__(self, request):
        probe = self.probes.get(request.path_info)
        return probe(request) if probe is not None else self.get_response(request)


def _plain(data: dict, status: int = 200) -> JsonResponse:
    response = JsonResponse(data, status=status)
    response["Cache-Control"] = "no-store"
    return response


@login_not_required
@require_GET
def healthz(request):
    return _plain({"status": "ok", **_database_outage()})


@login_not_required
@require_GET
def readyz(request):
    checks = {"database": _database(), "redis": _redis()}
    polls = _polls() if checks["database"] == "ok" and checks["redis"] == "ok" else None
    if polls is not None:
        checks["polls"] = "late" if polls["late"] else "awaiting" if polls["awaiting"] else "ok"
    ready = all(value == "ok" for value in checks.values())
    body = {"status": "ready" if ready else "not ready", "checks": checks, **_database_outage()}
    if polls is not None:
        body["clusters"] = polls
    return _plain(body, 200 if ready else 503)


def _database_outage() -> dict:
    """The database outage this process saw last and has not seen end (consumers/web/errors.py)."""
    outage = database_outage()
    return {} if outage is None else {"database": "unavailable", "database_unavailable_since": outage.since.isoformat()}


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        if database_unavailable_cause(exc) is not None:
            note_database_unavailable(exc)
        return "failed"
    note_database_answered()
    return "ok"


# Where this process's own readiness checks saw Redis fail and have not seen it answer since
# (host:port). Not only redis_client's outage: any request's successful Redis command ends that
# one, possibly before the next /readyz could see that Redis had come back.
_redis_failed: set[str] = set()
_lock = threading.Lock()


def _redis() -> str:
    where = redis_client.redis_location(settings.REDIS_URL)
    outage = redis_client.current_outage()
    with _lock:
        had_failed = where in _redis_failed or (outage is not None and outage.where == where)
    redis = get_redis()
    try:
        redis.ping()
    except UNAVAILABLE as exc:
        redis_client.note_unavailable(exc)
        with _lock:
            _redis_failed.add(where)
        return "failed"
    if had_failed:
        try:
            redis.set(RETURNED_KEY, str(time.time()), ex=RETURNED_TTL)
        except UNAVAILABLE:
            return "failed"
        with _lock:
            _redis_failed.discard(where)
    return "ok"


def _redis_back_since(redis) -> float:
    """Since when Redis has answered without a break, as far as the console can tell: since this
    Redis server started (a restart loses the snapshots, or reloads them from before it), or
    later, since a web process saw it come back after failing. A poll that ended before then
    wrote what was true before the outage and proves nothing about the workers since."""
    try:
        started = time.time() - float(redis.info("server")["uptime_in_seconds"])
    except (redis_py.exceptions.ResponseError, KeyError):  # INFO renamed away on some hosted Redis
        started = 0.0
    recorded = redis.get(RETURNED_KEY)
    return max(started, float(recorded) if recorded else 0.0)


def _polls() -> dict:
    """How many enabled clusters were polled in time, late, awaiting a poll after Redis came
    back, or never polled (none of them named).

    Awaiting: the cluster's last poll ended before Redis's latest return, or Redis holds no
    snapshot of it while its brokers are on record in the database (a poll read it before Redis
    lost its data). Not ready until each has been polled again. A cluster no poll ever read
    (added a moment ago) is no reason to take the console out of service."""
    clusters = list(Cluster.objects.filter(enabled=True))
    redis = get_redis()
    metas = snapshots.read_metas(redis, [c.pk for c in clusters])
    back_since = _redis_back_since(redis)
    missing = [c.pk for c in clusters if metas.get(c.pk) is None]
    polled_before = set(KnownBroker.objects.filter(cluster_id__in=missing).values_list("cluster_id", flat=True))
    now, counts = time.time(), {"polled": 0, "late": 0, "awaiting": 0, "never": 0}
    for cluster in clusters:
        meta = metas.get(cluster.pk)
        if meta is None:
            counts["awaiting" if cluster.pk in polled_before else "never"] += 1
        elif now - meta.polled_at > stale_after(cluster.poll_interval, meta.groups):
            counts["late"] += 1  # first: no poll for that long says more than when Redis came back
        elif meta.polled_at + meta.duration < back_since:  # when the poll wrote it, about
            counts["awaiting"] += 1
        else:
            counts["polled"] += 1
    return counts
