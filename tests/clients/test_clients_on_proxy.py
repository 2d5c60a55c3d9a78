"""RocketMQ 5 SDK clients through a proxy in cluster mode, on the real cluster: a gRPC PushConsumer
and SimpleConsumer share a group with a classic client. The classic one is asked through its
broker and answers; the two gRPC clients are listed, on the clients page, in a capture of the
group's stacks and on the verify form, with the exact reason they cannot be asked (read in the
proxy's source: consumers/clients/services.py), and a verification aimed at one is refused.

The oracles: mqadmin's consumerConnection through the brokers lists only the classic client and
through the proxy the gRPC ones; mqadmin's own consumerStatus (the official tool's way to a
client's running info and stacks) reaches the classic client and not the gRPC one."""

from __future__ import annotations

import json

import pytest

from consumers.models import Cluster
from devstack.mqadmin import parse_consumer_connection
from devstack.proxy import LocalProxy
from tests.conftest import SESSION_DIR
from tests.live.test_rocketmq5 import grpc_group, grpc_topic, proxy_clients

pytestmark = [pytest.mark.broker, pytest.mark.slow]
WHY = "which in cluster mode registers its clients with no broker and relays no request to them"


@pytest.fixture(scope="module")
def proxy(rmq_runtime, rocketmq):
    local = LocalProxy(rmq_runtime, rocketmq.namesrv_addr, SESSION_DIR / "proxy-clients", cluster=rocketmq.cluster)
    yield local.start()
    local.stop(grace=2)


def test_grpc_clients_are_named_with_why_they_cannot_be_asked(
    db, client, personas, namesrv, names, traffic, redis, proxy, mqadmin
):
    topic, group = grpc_topic(mqadmin, names.topic("grpc-clients")), names.group("grpc-clients")
    grpc_group(mqadmin, namesrv, group, topic)
    classic = traffic.consume(group, topic)
    push = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push")
    simple = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple")
    sent = traffic.produce(topic, 4).sent
    grpc = {push.client_id, simple.client_id}
    from_brokers = {c.client_id for c in parse_consumer_connection(
        mqadmin.run("consumerConnection", "-g", group).out).connections}  # fmt: skip
    assert from_brokers == {classic.client_id} and proxy_clients(mqadmin, proxy, group) >= grpc
    # (check=False: mqadmin's output holds the consumer's own properties, where "Exception" may appear)
    official = mqadmin.run("consumerStatus", "-g", group, "-i", push.client_id, check=False)
    assert "#Consumer MQ Detail#" not in official.out, official  # mqadmin cannot reach it either
    reached = mqadmin.run("consumerStatus", "-g", group, "-i", classic.client_id, check=False)
    assert "#Consumer MQ Detail#" in reached.out, reached

    Cluster.objects.create(name="local", namesrv_addrs=namesrv, proxy_addrs=proxy.remoting_address)
    client.force_login(personas["operator"])
    page = client.get(f"/groups/local/{group}/clients/").content.decode()
    rows = {c: page.split(f'data-client="{c}"', 1)[1].split("</tr>", 1)[0] for c in (classic.client_id, *grpc)}
    assert all(f"known only to the proxy {proxy.remoting_address}, {WHY}" in rows[c] for c in grpc), rows
    assert "known only to the proxy" not in rows[classic.client_id]  # asked through its broker: it answered
    one = client.get(f"/groups/local/{group}/clients/{simple.client_id}/").content.decode()
    assert 'id="client-unknown"' in one and WHY in one

    captured = client.post(f"/groups/local/{group}/clients/stacks/").content.decode()
    assert captured.count(WHY) == 2 and 'id="stacks-summary"' in captured

    target = sent[0]
    message = f"local/{topic}/{target.broker}/{target.queue_id}/{target.queue_offset}"
    form = client.get(f"/messages/{message}/verify/", {"group": group}).content.decode()
    assert all(f'data-client="{c}" data-askable="no"' in form for c in grpc) and form.count(WHY) == 2
    body = {"kind": "verify", "cluster": "local", "group": group, "reason": "check the new build",
            "params": {"client_id": push.client_id, "messages": [{"topic": topic, "broker": target.broker,
                       "queue_id": target.queue_id, "offset": target.queue_offset}]}}  # fmt: skip
    refused = client.post("/api/changes/", json.dumps(body), content_type="application/json")
    assert refused.status_code == 409 and WHY in refused.json()["error"], refused.content
