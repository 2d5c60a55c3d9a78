"""An abandoned group on the real cluster: a classic push consumer's group with offsets on both
brokers, its client stopped. The console lists it (at 0 days: no client now) with when its client
was last seen; mqadmin agrees that no client is connected and that it has offsets on both."""

from __future__ import annotations

import time

import pytest

from consumers.alerts.models import Alert, AlertRule
from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from devstack.mqadmin import parse_consumer_connection, parse_consumer_progress
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker]


def test_a_stopped_group_with_offsets_on_two_brokers_is_listed_as_abandoned(
    db, namesrv, names, create_topic, traffic, redis, history_dir, mqadmin, viewer_client
):
    topic, group = create_topic(names.topic("abandoned"), queues=2), names.group("abandoned")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    traffic.produce(topic, 20)
    consumer = traffic.consume(group, topic)
    consumer.wait_acked(20)

    def doc():
        poll_cluster(cluster)
        return snapshots.read_details(redis, cluster.pk)[group]

    wait(lambda: doc().online and doc().lag == 0, 60, "online, every message committed")
    seen_online = time.time()
    # a rule for groups abandoned for 0 days: what the next polls judge (the poll evaluates the rules)
    rule = AlertRule.objects.create(name="abandoned now", condition="abandoned", threshold=0, group_pattern=group)
    doc()
    assert not Alert.objects.filter(rule=rule).exists()  # online: not abandoned
    assert group not in [g["group"] for g in viewer_client.get("/api/groups/abandoned/?days=0").json()["groups"]]
    consumer.stop()
    wait(lambda: doc().online is False, 60, "offline")
    listed = {g["group"]: g for g in viewer_client.get("/api/groups/abandoned/?days=0").json()["groups"]}
    assert group in listed and seen_online - 30 < listed[group]["last_online"] <= seen_online + 1
    assert group not in [g["group"] for g in viewer_client.get("/api/groups/abandoned/").json()["groups"]]  # 7 days
    connections = mqadmin.run("consumerConnection", "-g", group, check=False)  # fails: nobody connected
    assert not parse_consumer_connection(connections.out).connections and "not online" in connections.err, connections
    rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out).rows
    assert {r.broker for r in rows if r.topic == topic} == {"broker-a", "broker-b"}
    alert = Alert.objects.get(rule=rule, subject=group)
    assert alert.state == "firing" and alert.evidence.startswith("no client online for 0.0 days (threshold 0 days)")
