"""A poll that fails as a whole (the name server does not answer) read no broker either: the
brokers are shown as unknown, with why and since when, never in the state the last good poll
saw. No RocketMQ needed: the cluster's name server address is a port nobody listens on."""

from __future__ import annotations

import pytest

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from devstack.processes import free_port
from tests.support.published import group, publish


@pytest.fixture
def east(db, redis, history_dir, settings):
    settings.ROCKETMQ_POLL_DEADLINE = 4
    settings.ROCKETMQ_REQUEST_TIMEOUT = 1.5
    settings.ROCKETMQ_CONNECT_TIMEOUT = 1.5
    cluster = Cluster.objects.create(name="east", namesrv_addrs=f"127.0.0.1:{free_port()}")
    publish(cluster, redis, [group("orders", lag=40)])  # the last good poll: broker-a ok
    return cluster


def test_a_failed_poll_shows_the_brokers_unknown_not_as_last_seen(east, redis, viewer_client):
    (good,) = snapshots.read_meta(redis, east.pk).brokers
    assert good.state == "ok" and good.put_tps == 1.5

    failed = poll_cluster(east)
    assert failed.status == "failed" and failed.error
    meta = snapshots.read_meta(redis, east.pk)
    (broker,) = meta.brokers
    assert meta.status == "failed" and broker.state == "unknown"
    assert broker.error == f"the poll failed: {failed.error}" and broker.unknown_since == meta.polled_at
    assert (broker.put_tps, broker.get_tps) == (None, None)  # rates of the last good poll are not current
    assert (broker.name, broker.address, broker.last_seen_at) == (good.name, good.address, good.last_seen_at)

    first_failure = meta.polled_at
    assert poll_cluster(east).status == "failed"
    meta = snapshots.read_meta(redis, east.pk)
    assert meta.polled_at > first_failure and meta.brokers[0].unknown_since == first_failure  # since the first

    html = viewer_client.get("/clusters/").content.decode()
    row = html[html.index('data-broker="broker-a"') :].split("</tr>")[0]
    assert 'data-state="unknown"' in row and ">unknown</span> since " in row and "the poll failed: " in row
    assert ">up<" not in row
    (listed,) = viewer_client.get("/api/clusters/").json()["clusters"]
    (api_broker,) = listed["last_poll"]["brokers"]
    assert api_broker["state"] == "unknown" and api_broker["error"].startswith("the poll failed: ")
    assert api_broker["unknown_since"] == first_failure


def test_a_good_poll_after_a_failed_one_shows_the_brokers_it_read(east, redis):
    assert poll_cluster(east).status == "failed"
    publish(east, redis, [group("orders", lag=40)])
    (broker,) = snapshots.read_meta(redis, east.pk).brokers
    assert broker.state == "ok" and broker.unknown_since is None and broker.error is None
