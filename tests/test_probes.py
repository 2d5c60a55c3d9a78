"""/healthz and /readyz: no login, JSON, no names; ready only with the database, Redis and
every enabled cluster polled within its staleness bound."""

from __future__ import annotations

import time

import pytest

from consumers.live import snapshots
from consumers.live.documents import ClusterMeta
from consumers.models import Cluster


def _meta(cluster: Cluster, age: float) -> ClusterMeta:
    return ClusterMeta(cluster_id=cluster.pk, name=cluster.name, polled_at=time.time() - age, duration=0.1,
                       status="ok", last_success_at=time.time() - age, groups=10)  # fmt: skip


def test_healthz_answers_with_nothing_asked(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # Redis down is no reason to restart the web process
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.post("/healthz").status_code == 405


def test_readyz_is_ready_when_everything_answers_and_polls_are_in_time(client, redis, db):
    east = Cluster.objects.create(name="east-secret-name", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
    Cluster.objects.create(name="new", namesrv_addrs="10.1.2.4:9876")  # never polled yet: not a reason
    Cluster.objects.create(name="off", namesrv_addrs="10.1.2.5:9876", enabled=False)
    snapshots.write_meta(redis, east.pk, _meta(east, 3))
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ready",
        "checks": {"database": "ok", "redis": "ok", "polls": "ok"},
        "clusters": {"polled": 1, "late": 0, "never": 1},
    }


def test_readyz_says_late_polls_without_naming_the_cluster(client, redis, db, settings):
    east = Cluster.objects.create(name="east-secret-name", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
    snapshots.write_meta(redis, east.pk, _meta(east, 15 + 3600))  # workers stopped an hour ago
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["polls"] == "late"
    assert response.json()["clusters"]["late"] == 1
    assert b"east" not in response.content and b"10.1.2.3" not in response.content


@pytest.mark.django_db
def test_readyz_is_not_ready_fast_when_redis_does_not_answer(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    started = time.monotonic()
    response = client.get("/readyz")
    assert response.status_code == 503 and time.monotonic() - started < 5
    assert response.json() == {"status": "not ready", "checks": {"database": "ok", "redis": "failed"}}
    assert response["Cache-Control"] == "no-store"
