"""Polling through failures on a cluster of its own: unreadable parts keep their last value,
marked with the reason and their age, and the pages say so."""

from __future__ import annotations

import signal

import pytest

from consumers import snapshots
from consumers.models import Cluster
from consumers.services.polling import poll_cluster
from tests.conftest import SESSION_DIR
from tests.support.scenarios import prepared_cluster

pytestmark = [pytest.mark.broker, pytest.mark.slow]
TOPIC, GROUP = "T-pf", "G-pf"


@pytest.fixture(scope="module")
def small(rmq_runtime):
    local = prepared_cluster(rmq_runtime, SESSION_DIR / "poll-faults", topic=TOPIC, group=GROUP)
    yield local
    local.stop()


@pytest.fixture
def cluster(db, redis, history_dir, small, settings):
    settings.ROCKETMQ_POLL_DEADLINE = 4
    settings.ROCKETMQ_REQUEST_TIMEOUT = 1.5
    return Cluster.objects.create(name="small", namesrv_addrs=small.namesrv_addr)


def test_a_frozen_broker_leaves_its_queues_as_last_seen_marked_stale(cluster, redis, small, viewer_client):
    assert poll_cluster(cluster).status == "ok"
    first = snapshots.read_detail(redis, cluster.pk, GROUP)
    small.brokers["broker-b"].process.signal(signal.SIGSTOP)
    try:
        result = poll_cluster(cluster)
    finally:
        small.brokers["broker-b"].process.signal(signal.SIGCONT)
    assert result.status == "partial" and result.duration < 8
    doc = snapshots.read_detail(redis, cluster.pk, GROUP)
    rows = {(q["broker"], q["queue_id"]): q for q in doc["queues"] if q["topic"] == TOPIC}
    assert len(rows) == 4
    fresh, stale = rows[("broker-a", 0)], rows[("broker-b", 0)]
    assert fresh["stale_reason"] is None and fresh["as_of"] > first["as_of"]
    assert stale["as_of"] == first["as_of"] and stale["stale_reason"].startswith("broker unreadable:")
    assert (stale["consumer"], stale["lag"]) == (1, rows[("broker-b", 0)]["max"] - 1)
    meta = snapshots.read_meta(redis, cluster.pk)
    assert next(b for b in meta["brokers"] if b["name"] == "broker-b")["error"]
    html = viewer_client.get(f"/groups/small/{GROUP}/").content.decode()
    assert 'title="broker unreadable:' in html and "Not read in the last poll" in html
    assert "unreadable" in viewer_client.get("/clusters/").content.decode()


def test_a_dead_name_server_fails_the_poll_and_keeps_the_last_data(cluster, redis, small, viewer_client):
    assert poll_cluster(cluster).status in ("ok", "partial")
    before = snapshots.read_detail(redis, cluster.pk, GROUP)
    small.namesrv.stop()
    small.namesrv = None
    result = poll_cluster(cluster)
    assert result.status == "failed" and "no name server answered" in result.error
    meta = snapshots.read_meta(redis, cluster.pk)
    assert meta["status"] == "failed" and meta["last_success_at"] < meta["polled_at"]
    assert snapshots.read_detail(redis, cluster.pk, GROUP) == before  # the last known data stays
    html = viewer_client.get("/clusters/").content.decode()
    assert "Last poll failed: ConnectError: no name server answered" in html
    assert f'data-group="{GROUP}"' in viewer_client.get("/groups/").content.decode()
