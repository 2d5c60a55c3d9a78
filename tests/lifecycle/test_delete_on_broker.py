"""Deleting a group and undoing it on the real cluster, with mqadmin as the oracle: a stopped
group with offsets on both brokers is deleted (getConsumerConfig and consumerProgress no longer
show its config or offsets on either), then restored by the undo (the same config fields and the
same offset per queue as before); a delete approved while no client was online is refused when it
runs after a client started; an undo does not overwrite a group recreated with offsets of its own."""

from __future__ import annotations

import json

import pytest

from consumers.changes import workflow
from consumers.changes.guards import Actor
from consumers.changes.models import ChangeRequest, State
from consumers.lifecycle import deletion, kind
from consumers.lifecycle.execute import CLIENT_ONLINE, RECREATED
from consumers.models import Cluster
from devstack.mqadmin import parse_consumer_config, parse_consumer_progress
from tests.support.scenarios import offline_group, wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def offsets_of(mqadmin, group: str, topic: str) -> dict[tuple[str, int], int]:
    found = mqadmin.run("consumerProgress", "-g", group, check=False)
    if "Consume Diff Total" not in found.out:  # no table: mqadmin found no offsets, and says so
        assert "offset table is empty" in found.err + found.out or "not exist" in found.err + found.out, found
        return {}
    return {(r.broker, r.queue_id): r.consumer_offset for r in parse_consumer_progress(found.out).rows
            if r.topic == topic}  # fmt: skip


def config_of(mqadmin, group: str) -> dict[str, dict[str, str]]:
    return parse_consumer_config(mqadmin.run("getConsumerConfig", "-g", group, check=False).out)


def approved_and_run(request: ChangeRequest, personas) -> ChangeRequest:
    workflow.approve(request, actor=Actor(personas["approver"], "10.0.0.2"))
    kind.run(request.pk)  # what the worker does with execute_change
    return ChangeRequest.objects.get(pk=request.pk)


def test_a_stopped_group_is_deleted_on_both_brokers_and_the_undo_restores_it(
    namesrv, names, create_topic, traffic, mqadmin, personas, client
):
    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    topic, group = create_topic(names.topic("delete")), names.group("delete")
    sent = traffic.produce(topic, 24).sent
    chosen = {(topic, m.broker, m.queue_id): 1 + m.queue_id for m in sent}  # a different offset per queue
    offline_group(mqadmin, namesrv, group, chosen)
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group, "-r", "7")  # a field not the default
    config_before, offsets_before = config_of(mqadmin, group), offsets_of(mqadmin, group, topic)
    assert set(config_before) == {"broker-a", "broker-b"} and {m.broker for m in sent} == {"broker-a", "broker-b"}
    assert offsets_before == {(b, q): o for (_, b, q), o in chosen.items()}

    client.force_login(personas["operator"])
    body = {"kind": "delete", "cluster": "local", "group": group, "params": {}, "reason": "unused since the move"}
    made = client.post("/api/changes/", json.dumps(body), content_type="application/json")
    assert made.status_code == 201, made.content
    plan = made.json()["plan"]
    assert [b["broker"] for b in plan["brokers"]] == ["broker-a", "broker-b"]
    assert plan["totals"]["offsets"] >= len(chosen)  # the retry topic's offsets, if any, go too
    planned = {label: o for b in plan["brokers"] for label, o in b["offsets"].items() if label.startswith(topic)}
    assert planned == {f"{t}@{b}#{q}": o for (t, b, q), o in chosen.items()}

    deleted = approved_and_run(ChangeRequest.objects.get(pk=made.json()["id"]), personas)
    assert deleted.state == State.DONE, deleted.result
    assert config_of(mqadmin, group) == {} and offsets_of(mqadmin, group, topic) == {}
    assert all(check["ok"] for check in deleted.result["read_back"].values())

    restore = deletion.undo_delete(deleted, actor=Actor(personas["operator"], "10.0.0.1"), reason="still needed")
    assert restore.kind == ChangeRequest.Kind.RESTORE and restore.state == State.PENDING
    restored = approved_and_run(restore, personas)
    assert restored.state == State.DONE, restored.result
    assert offsets_of(mqadmin, group, topic) == offsets_before
    after = config_of(mqadmin, group)
    assert set(after) == set(config_before)
    for broker, fields in config_before.items():
        assert {k: after[broker].get(k) for k in fields} == fields, broker


def test_a_client_that_started_after_approval_stops_the_delete_and_an_undo_keeps_a_recreated_group(
    namesrv, names, create_topic, traffic, mqadmin, personas
):
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    operator = Actor(personas["operator"], "10.0.0.1")
    topic = create_topic(names.topic("keep"))
    sent = traffic.produce(topic, 8).sent
    busy, again = names.group("busy"), names.group("again")
    for group in (busy, again):
        offline_group(mqadmin, namesrv, group, {(topic, m.broker, m.queue_id): 0 for m in sent})

    request = deletion.request_delete(actor=operator, cluster=cluster, group=busy, reason="looks unused")
    workflow.approve(request, actor=Actor(personas["approver"], "10.0.0.2"))
    consumer = traffic.consume(busy, topic)
    try:
        wait(lambda: deletion.online_clients(deletion.read(cluster, busy)), 60, "the client online")
        kind.run(request.pk)
        refused = ChangeRequest.objects.get(pk=request.pk)
        assert refused.state == State.FAILED and set(refused.result["failed"].values()) == {CLIENT_ONLINE}
        assert set(config_of(mqadmin, busy)) == {"broker-a", "broker-b"}
    finally:
        consumer.stop()

    gone = approved_and_run(deletion.request_delete(actor=operator, cluster=cluster, group=again, reason="x"),
                            personas)  # fmt: skip
    assert gone.state == State.DONE
    ours = {(topic, m.broker, m.queue_id): 3 for m in sent}  # someone recreates it, with offsets of its own
    offline_group(mqadmin, namesrv, again, ours)
    kept = approved_and_run(deletion.undo_delete(gone, actor=operator, reason="back"), personas)
    assert kept.state == State.FAILED and set(kept.result["failed"].values()) == {RECREATED}
    assert offsets_of(mqadmin, again, topic) == {(b, q): 3 for (_, b, q) in ours}


def test_a_config_without_offsets_and_offsets_without_a_config_are_listed_as_half_there(
    namesrv, names, create_topic, traffic, mqadmin, redis, viewer_client
):
    from consumers.rocketmq import AdminClient
    from tests.conftest import run

    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    topic = create_topic(names.topic("half"))
    sent = traffic.produce(topic, 4).sent
    config_only, offsets_only = names.group("config-only"), names.group("offsets-only")
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", config_only)
    offline_group(mqadmin, namesrv, offsets_only, {(topic, m.broker, m.queue_id): 1 for m in sent})

    async def drop_configs():  # what `mqadmin deleteSubGroup` without -r does: the offsets stay
        async with AdminClient(namesrv) as client:
            for address in (await client.topology.cluster_info()).masters().values():
                await client.actions.delete_subscription_group(offsets_only, address, clean_offset=False)

    run(drop_configs())
    assert config_of(mqadmin, offsets_only) == {} and offsets_of(mqadmin, offsets_only, topic)
    assert set(config_of(mqadmin, config_only)) == {"broker-a", "broker-b"}

    body = viewer_client.get("/api/groups/abandoned/?cluster=local").json()
    [local] = body["unpaired"]
    assert local["unreadable"] == [] and config_only in local["config_without_offsets"]
    assert offsets_only not in local["config_without_offsets"]
    assert config_only not in str(local["offsets_without_config"])
    [found] = [o for o in local["offsets_without_config"] if o["group"] == offsets_only]
    assert found["topics"] == [topic] and found["brokers"] == sorted({m.broker for m in sent})
    page = viewer_client.get("/groups/abandoned/").content.decode()
    assert f'class="config-only" data-group="{config_only}"' in page
    assert f'class="offsets-only" data-group="{offsets_only}"' in page
