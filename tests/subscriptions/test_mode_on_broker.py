"""Switching a classic push consumer's group from PULL to POP and back, on the real cluster, as
change requests: the client goes on consuming (every message acknowledged once by its own count;
the ones handed out by POP carry the broker's POP_CK), its own running info through mqadmin
consumerStatus lists its POP queues after the switch and its pulled queues after the undo, and the
console's read-back and config page show the mode the brokers hold."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from consumers.changes import workflow
from consumers.changes.guards import Actor
from consumers.changes.models import ChangeRequest, State
from consumers.models import Cluster
from consumers.subscriptions import kind, modes
from devstack.mqadmin import parse_consumer_progress
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def detail_rows(mqadmin, group: str, client_id: str, topic: str) -> dict[str, int]:
    """How many of the topic's queues the client lists under each section of its running info
    (#Consumer MQ Detail#: pulled, #Consumer Pop Detail#: popped), as mqadmin consumerStatus prints it."""
    out = mqadmin.run("consumerStatus", "-g", group, "-i", client_id, check=False).out  # its properties name exceptions
    counts, section = Counter(), None
    for line in out.splitlines():
        if line.startswith("#Consumer MQ Detail#"):
            section = "pull"
        elif line.startswith("#Consumer Pop Detail#"):
            section = "pop"
        elif line.startswith("#") and not line.startswith("#Topic"):
            section = None if line.strip().endswith("#") else section
        elif section and line.split() and line.split()[0] == topic:
            counts[section] += 1
    return counts


def committed(mqadmin, group: str) -> bool:
    found = mqadmin.run("consumerProgress", "-g", group, check=False).out
    return "Consume Diff Total" in found and parse_consumer_progress(found).diff_total == 0


def acked_once_each(consumer, sent) -> list[dict]:
    ids = {m.msg_id for m in sent}
    consumer.wait_acked(0)
    wait(lambda: ids <= consumer.acked_ids, 120, "every message acknowledged")
    acked = [e for e in consumer.events("acked") if e["msgId"] in ids]
    assert Counter(e["msgId"] for e in acked) == Counter(ids)  # once each, by the client's own count
    return acked


def approved_and_run(request: ChangeRequest, personas) -> ChangeRequest:
    workflow.approve(request, actor=Actor(personas["approver"], "10.0.0.2"))
    kind.run_mode(request.pk)
    return ChangeRequest.objects.get(pk=request.pk)


def test_a_push_consumer_switched_to_pop_goes_on_and_the_undo_returns_it_to_pull(
    namesrv, names, create_topic, traffic, mqadmin, personas, client, redis, history_dir
):
    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    topic, group = create_topic(names.topic("mode"), queues=2), names.group("mode")
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group)
    consumer = traffic.consume(group, topic, pop=True)  # asks the brokers for its queues (clientRebalance false)
    try:
        first = traffic.produce(topic, 10).sent
        assert not any(e.get("popCk") for e in acked_once_each(consumer, first))  # PULL, the brokers' default
        wait(lambda: committed(mqadmin, group), 60, "the pulled offsets committed")

        client.force_login(personas["operator"])
        body = {"kind": "mode", "cluster": "local", "group": group, "reason": "try POP for the slow consumers",
                "params": {"topic": topic, "mode": "POP", "share": 8}}  # fmt: skip
        made = client.post("/api/changes/", json.dumps(body), content_type="application/json")
        assert made.status_code == 201, made.content
        plan = made.json()["plan"]
        assert [(b["broker"], b["before"]["mode"], b["before"]["explicit"]) for b in plan["brokers"]] == [
            ("broker-a", "PULL", False), ("broker-b", "PULL", False)]  # fmt: skip
        assert [(c["client_id"], c["pops"]) for c in plan["clients"]] == [(consumer.client_id, True)]

        switched = approved_and_run(ChangeRequest.objects.get(pk=made.json()["id"]), personas)
        assert switched.state == State.DONE, switched.result
        assert {b: (c["mode"], c["share"]) for b, c in switched.result["read_back"].items()} == {
            "broker-a": ("POP", 8), "broker-b": ("POP", 8)}  # fmt: skip
        page = client.get(f"/groups/local/{group}/config/").content.decode()
        assert page.count(f'data-topic="{topic}"') == 2 and page.count('data-mode="POP"') == 2
        wait(lambda: detail_rows(mqadmin, group, consumer.client_id, topic)["pop"] > 0, 90, "the client pops")

        second = traffic.produce(topic, 10).sent
        assert all(e.get("popCk") for e in acked_once_each(consumer, second))  # handed out by POP
        wait(lambda: committed(mqadmin, group), 60, "the popped offsets committed")

        back = modes.undo(switched, actor=Actor(personas["operator"], "10.0.0.1"), reason="back to PULL")
        returned = approved_and_run(back, personas)
        assert returned.state == State.DONE, returned.result
        assert {c["mode"] for c in returned.result["read_back"].values()} == {"PULL"}
        wait(lambda: detail_rows(mqadmin, group, consumer.client_id, topic) == {"pull": 4}, 90, "the client pulls")

        third = traffic.produce(topic, 10).sent
        assert not any(e.get("popCk") for e in acked_once_each(consumer, third))
    finally:
        consumer.stop()
