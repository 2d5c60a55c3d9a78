"""/healthz and /readyz: no login, JSON, no names; ready only with the database, Redis and
every enabled cluster polled within its staleness bound and since Redis last came back."""

from __future__ import annotations

import signal
import time

import pytest
from django.utils import timezone

from consumers.live import probes, snapshots
from consumers.live.documents import ClusterMeta
from consumers.models import Cluster, KnownBroker
from devstack.redis import LocalRedis
from tests.test_database_outage import DatabaseDown


def _meta(cluster: Cluster, age: float) -> ClusterMeta:
    return ClusterMeta(cluster_id=cluster.pk, name=cluster.name, polled_at=time.time() - age, duration=0.1,
                       status="ok", last_success_at=time.time() - age, groups=10)  # fmt: skip


def _up_for(redis, seconds: int) -> None:
    """Wait until the Redis server has run `seconds` (INFO counts whole seconds): a poll the test
    dates before its start would be one from before a restart."""
    while redis.info("server")["uptime_in_seconds"] < seconds:
        time.sleep(0.2)


def _polled_before(cluster: Cluster) -> None:
    """A broker on record: a poll read the cluster before (consumers/live/brokers.py)."""
    now = timezone.now()
    KnownBroker.objects.create(
        cluster=cluster, name="broker-a", address="10.1.2.3:10911", first_seen=now, last_seen=now
    )


def test_healthz_answers_with_nothing_asked(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # Redis down is no reason to restart the web process
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.post("/healthz").status_code == 405


def test_readyz_is_ready_when_everything_answers_and_polls_are_in_time(client, redis, db):
    east = Cluster.objects.create(name="east-secret-name", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
    Cluster.objects.create(name="new", namesrv_addrs="10.1.2.4:9876")  # never polled yet: not a reason
    Cluster.objects.create(name="off", namesrv_addrs="10.1.2.5:9876", enabled=False)
    _up_for(redis, 3)
    snapshots.write_meta(redis, east.pk, _meta(east, 1))
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ready",
        "checks": {"database": "ok", "redis": "ok", "polls": "ok"},
        "clusters": {"polled": 1, "late": 0, "awaiting": 0, "never": 1},
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


def test_readyz_waits_for_a_poll_after_redis_lost_its_data(client, redis, db):
    """Redis restarted empty (no persistence): a cluster a poll read before has no snapshot, and
    the console is not ready until a poll brings it back (it answered 200 for 53 s here)."""
    east = Cluster.objects.create(name="east-secret-name", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
    _polled_before(east)
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["polls"] == "awaiting"
    assert response.json()["clusters"] == {"polled": 0, "late": 0, "awaiting": 1, "never": 0}
    assert b"east" not in response.content and b"10.1.2.3" not in response.content
    _up_for(redis, 2)
    snapshots.write_meta(redis, east.pk, _meta(east, 0))  # the first poll after Redis returned
    assert client.get("/readyz").status_code == 200


def test_readyz_waits_for_a_poll_after_redis_restarted_with_its_data(client, db, settings, tmp_path):
    """With persistence, Redis comes back holding the snapshots of before: a poll that ended
    before this Redis server started proves nothing about the workers since."""
    server = LocalRedis(tmp_path / "redis")
    try:
        settings.REDIS_URL = server.url
        redis = probes.get_redis()
        east = Cluster.objects.create(name="east", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
        before = _meta(east, 1)  # in time, by its age alone
        server.stop()
        server = LocalRedis(tmp_path / "redis", port=server.port)
        snapshots.write_meta(redis, east.pk, before)  # as the append-only file gives it back
        response = client.get("/readyz")
        assert response.status_code == 503 and response.json()["clusters"]["awaiting"] == 1, response.content
        _up_for(redis, 2)
        snapshots.write_meta(redis, east.pk, _meta(east, 0))
        assert client.get("/readyz").status_code == 200
    finally:
        server.stop()


def test_readyz_waits_for_a_poll_after_redis_came_back_without_restarting(client, db, settings, tmp_path):
    """Redis paused for a while (as a network outage or a hung server) restarts nothing: the
    web process that saw it fail records when it answered again, for every process to read."""
    server = LocalRedis(tmp_path / "redis")
    try:
        settings.REDIS_URL = server.url + "?socket_timeout=1&socket_connect_timeout=1"
        redis = probes.get_redis()
        east = Cluster.objects.create(name="east", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
        _up_for(redis, 2)
        snapshots.write_meta(redis, east.pk, _meta(east, 0.5))
        assert client.get("/readyz").status_code == 200
        server.process.popen.send_signal(signal.SIGSTOP)
        try:
            assert client.get("/readyz").json()["checks"]["redis"] == "failed"
        finally:
            server.process.popen.send_signal(signal.SIGCONT)
        response = client.get("/readyz")
        assert response.status_code == 503 and response.json()["checks"]["polls"] == "awaiting", response.content
        assert float(redis.get(probes.RETURNED_KEY)) > time.time() - 5
        assert client.get("/readyz").status_code == 503  # recorded: not only the first answer after the return
        snapshots.write_meta(redis, east.pk, _meta(east, 0))  # the first poll after it
        assert client.get("/readyz").status_code == 200
    finally:
        server.stop()


def test_a_late_poll_is_late_whenever_redis_came_back(client, redis, db):
    east = Cluster.objects.create(name="east", namesrv_addrs="10.1.2.3:9876", poll_interval=15)
    snapshots.write_meta(redis, east.pk, _meta(east, 3600))
    assert client.get("/readyz").json()["clusters"] == {"polled": 0, "late": 1, "awaiting": 0, "never": 0}


def test_the_probes_say_the_database_is_down(client, redis, db):
    """Asked without a session, as a load balancer asks: /readyz is 503 with the database
    failed; /healthz stays 200 (no restart for an outage) but says what this process saw."""
    with DatabaseDown().installed():
        ready = client.get("/readyz")
        health = client.get("/healthz")
    assert ready.status_code == 503 and ready.json()["checks"] == {"database": "failed", "redis": "ok"}
    assert ready.json()["database"] == "unavailable" and ready.json()["database_unavailable_since"]
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert health.json()["database"] == "unavailable"
    assert client.get("/readyz").json()["checks"]["database"] == "ok"  # answers again: the outage is over
    assert client.get("/healthz").json() == {"status": "ok"}


def test_the_probes_answer_an_orchestrator_by_its_address_over_plain_http(client, redis, db, settings):
    """A kubelet asks by the pod's address, over HTTP: not an allowed host, and the HTTPS
    redirect's 301 would pass its check whatever the console's state."""
    settings.ALLOWED_HOSTS, settings.SECURE_SSL_REDIRECT = ["console.example.org"], True
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    assert client.get("/healthz", HTTP_HOST="10.244.1.7:8000").json() == {"status": "ok"}
    ready = client.get("/readyz", HTTP_HOST="10.244.1.7:8000")
    assert ready.status_code == 503 and ready.json()["checks"]["redis"] != "ok"  # not a 301
    assert client.get("/groups/", HTTP_HOST="10.244.1.7:8000").status_code == 400  # every other page checks
    assert client.get("/healthz/x", HTTP_HOST="console.example.org").status_code == 301
