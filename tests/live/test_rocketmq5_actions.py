# ruff: noqa: F811 (cluster and proxy: the fixtures of test_rocketmq5.py, imported below)
"""RocketMQ 5's own clients, acted on truthfully: their groups reset, their dead letters shown
and redriven, their messages tracked, through a real rocketmq-proxy in cluster mode and the
official gRPC Java SDK (rocketmq-client-java 5.x). Truth: the clients' own counts, and mqadmin
(consumerProgress: the brokers' pop positions)."""

from __future__ import annotations

import json
import time

import pytest

from consumers.live.poll import poll_cluster
from devstack.mqadmin import parse_consumer_progress
from tests.live.test_rocketmq5 import (  # noqa: F401 (cluster, proxy: fixtures)
    _all_received_and_settled,
    _progress,
    cluster,
    doc_of,
    grpc_group,
    grpc_topic,
    proxy,
)
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.mark.django_db(transaction=True)
def test_a_reset_of_a_grpc_group_is_previewed_online_and_verified_by_what_the_client_received(
    cluster, redis, proxy, mqadmin, traffic, names, personas, settings
):
    from consumers.changes.guards import Actor
    from consumers.changes.models import State
    from consumers.changes.workflow import approve
    from consumers.resets import execute
    from consumers.resets.services import request_reset

    settings.RESET_VERIFY_SECONDS = 10
    topic = grpc_topic(mqadmin, names.topic("grpc-reset"))
    group = names.group("grpc-reset")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push")
    traffic.produce(topic, 40)
    consumer.wait_counts(lambda c: c["acked"] >= 40, 90, "acked 40")
    wait(lambda: sum(r.diff for r in _progress(mqadmin, group, topic)) == 0, 30, "the pops are committed")
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "shift", "shift": -5},
        reason="replay the last five of each queue",
    )  # fmt: skip
    assert request.plan["online"] is True and request.plan["clients"] == [consumer.client_id]
    assert request.plan["totals"][topic]["reconsumed"] == 20  # 4 queues
    before = consumer.status()["received"]
    approve(request, actor=Actor(personas["approver"]))
    done = execute.execute_reset(request.pk)
    assert done.state == State.DONE, done.result
    assert all(check["ok"] for check in done.result["verification"].values())
    # the client's own count: exactly the 20 replayed messages came again, nothing more
    counts = consumer.wait_counts(lambda c: c["received"] >= before + 20, 60, "the replay arrived")
    time.sleep(3)
    assert consumer.status()["received"] == before + 20 and counts["distinct"] == 40


def test_a_grpc_groups_dead_letters_show_their_topic_and_true_deliveries_and_are_redriven_truly(
    cluster, redis, proxy, mqadmin, traffic, names, viewer_client, personas, namesrv
):
    """A SimpleConsumer that never acks, max attempts 3 (retryMaxTimes 2): each message is
    delivered three times (the client's own count), then dead-lettered with its POP retry
    topic as origin and reconsume times 4."""
    topic = grpc_topic(mqadmin, names.topic("grpc-dlq"))
    group = names.group("grpc-dlq")
    grpc_group(mqadmin, namesrv, group, topic, max_retries=2)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple", mode="failing",
                                    invisibleSeconds=10)  # fmt: skip
    bystander_group = grpc_group(mqadmin, namesrv, names.group("grpc-bystander"), topic)
    bystander = traffic.grpc_consume(proxy.grpc_endpoint, bystander_group, topic, kind="push")
    traffic.produce(topic, 3)

    def dead() -> list[dict]:
        answer = viewer_client.get(f"/api/dlq/local/{group}/messages/")
        return answer.json().get("messages", []) if answer.status_code == 200 else []

    wait(lambda: len(dead()) == 3, 150, "three dead letters")
    counts = consumer.status()
    assert counts["distinct"] == 3 and counts["maxDeliveries"] == 3 and counts["acked"] == 0, counts
    rows = dead()
    assert {r["original_topic"] for r in rows} == {topic}  # not %RETRY%{group}_{topic}
    assert {r["deliveries"] for r in rows} == {3}, [(r["deliveries"], r["reconsume_times"]) for r in rows]
    assert all(r["pop_retry_topic"] in (f"%RETRY%{group}_{topic}", f"%RETRY%{group}+{topic}") for r in rows)
    # the broker's side of it: its POP retry topic was written once after every failed delivery,
    # the last one too, so the group's redeliveries are the retry writes less its dead letters
    # (what RETRY_STORM counts); the DLQ overview says which kind of consumer sent them
    assert poll_cluster(cluster).status == "ok"
    doc = doc_of(redis, cluster, group)
    writes = sum(q.max for q in doc.queues if q.retry)
    assert writes - doc.dlq_count == counts["received"] - counts["distinct"] == 6, (writes, doc.dlq_count, counts)
    page = viewer_client.get("/dlq/").content.decode()
    assert f'data-group="{group}"' in page and "gRPC SimpleConsumer (POP, via proxy)" in page

    # back to this group: POP consumers never read %RETRY%{group}, and nothing reaches them alone
    from consumers.changes.guards import Actor, ChangeRefused
    from consumers.dlq import redrive, runner
    from consumers.dlq.browse import Selection

    operator = Actor(personas["operator"])
    with pytest.raises(ChangeRefused, match="consumes with POP"):
        redrive.plan_redrive(actor=operator, cluster=cluster, group=group, selection=Selection(), target="group",
                             rate=100)  # fmt: skip
    # to the original topic: the real one, so every group on it gets them once, and no phantom group
    bystander.wait_counts(lambda c: c["acked"] >= 3, 60, "the bystander consumed the originals")
    job = redrive.plan_redrive(actor=operator, cluster=cluster, group=group, selection=Selection(), target="original",
                               rate=100)  # fmt: skip
    done = runner.run_job(job.pk)
    assert (done.state, done.moved, done.total) == ("done", 3, 3)
    counts = bystander.wait_counts(lambda c: c["received"] >= 6, 60, "the bystander received the redriven copies")
    time.sleep(2)
    counts = bystander.status()
    assert (counts["received"], counts["distinct"], counts["maxDeliveries"]) == (6, 6, 1), counts
    assert f"{group}_{topic}" not in _subscription_groups(namesrv)
    consumer.stop()
    bystander.stop()


def test_a_push_consumers_dead_letters_show_the_deliveries_the_client_made(
    cluster, proxy, mqadmin, traffic, names, viewer_client, namesrv
):
    """A PushConsumer whose listener always fails, max attempts 2 (retryMaxTimes 1): the SDK
    forwards each message to the DLQ itself at its last attempt, so the dead letter stores one
    reconsume time fewer than a SimpleConsumer's (which the proxy dead-letters at the pop after
    its last attempt). Oracle: the client's own count of deliveries per message."""
    topic = grpc_topic(mqadmin, names.topic("grpc-push-dlq"))
    group = grpc_group(mqadmin, namesrv, names.group("grpc-push-dlq"), topic, max_retries=1)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push", mode="failing")
    traffic.produce(topic, 4)

    def dead() -> list[dict]:
        answer = viewer_client.get(f"/api/dlq/local/{group}/messages/")
        return answer.json().get("messages", []) if answer.status_code == 200 else []

    wait(lambda: len(dead()) == 4, 150, "four dead letters")
    counts = consumer.status()
    assert (counts["distinct"], counts["maxDeliveries"], counts["received"]) == (4, 2, 8), counts
    assert [r["deliveries"] for r in dead()] == [2] * 4, [(r["deliveries"], r["reconsume_times"]) for r in dead()]
    consumer.stop()


def _subscription_groups(namesrv: str) -> set[str]:
    from consumers.rocketmq import AdminClient
    from tests.conftest import run

    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            return {g for a in masters.values() for g in await client.topology.subscription_groups(a)}

    return run(read())


@pytest.mark.django_db(transaction=True)
def test_a_reset_of_a_slow_simple_consumer_to_earliest_is_done_and_the_client_receives_it_all_again(
    cluster, redis, proxy, mqadmin, traffic, names, personas, settings
):
    """A SimpleConsumer acking one message in three (the rest in flight for 60 s). After a reset
    to earliest the request ends done, verified from the consumer's side (its popped position
    moved on from 0), and the client's own count shows every message delivered again."""
    from consumers.changes.guards import Actor
    from consumers.changes.models import State
    from consumers.changes.workflow import approve
    from consumers.resets import execute
    from consumers.resets.defects import IN_FLIGHT_NOTE
    from consumers.resets.services import request_reset

    settings.RESET_VERIFY_SECONDS = 10
    topic = grpc_topic(mqadmin, names.topic("grpc-slow-reset"))
    group = names.group("grpc-slow-reset")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple", mode="slow", ackEvery=3,
                                    invisibleSeconds=60)  # fmt: skip
    try:
        traffic.produce(topic, 30)
        counts = consumer.wait_counts(_all_received_and_settled(30), 60, "all 30 received, each acked or hidden")
        wait(lambda: sum(r.diff for r in _progress(mqadmin, group, topic)) == 0, 30, "the pops are committed")
        request = request_reset(actor=Actor(personas["operator"]), cluster=cluster, group=group,
                                params={"strategy": "earliest"}, reason="replay all")  # fmt: skip
        assert request.plan["online"] is True and request.plan["pop"] is True
        assert request.plan["warnings"] == [IN_FLIGHT_NOTE]  # not FIFO: no known defect applies
        assert request.plan["totals"][topic]["reconsumed"] == 30
        before = consumer.status()["received"]
        approve(request, actor=Actor(personas["approver"]))
        done = execute.execute_reset(request.pk)
        assert done.state == State.DONE, json.dumps(done.result, indent=1)
        assert all(check["ok"] for check in done.result["verification"].values()), done.result["verification"]
        counts = consumer.wait_counts(lambda c: c["received"] >= before + 30, 60, "all 30 again")
        assert counts["distinct"] == 30  # the same 30 messages, nothing new
    finally:
        consumer.stop()


@pytest.mark.django_db(transaction=True)
def test_a_reset_preview_with_the_proxy_down_says_the_online_state_is_unknown(
    cluster, redis, proxy, mqadmin, traffic, names, viewer_client
):
    topic = grpc_topic(mqadmin, names.topic("grpc-nopx"))
    group = names.group("grpc-nopx")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push")
    traffic.produce(topic, 8)
    consumer.wait_counts(lambda c: c["acked"] >= 8, 90, "acked 8")
    consumer.stop()
    proxy.kill()
    try:
        from consumers.resets.services import preview

        plan = preview(cluster, group, {"strategy": "earliest"})
        assert plan["online"] is None and plan["clients"] == []
        page = viewer_client.get(f"/groups/local/{group}/reset/preview/", {"strategy": "earliest"})
        assert page.status_code == 200
        assert "online state unknown (a proxy could not be read)" in page.content.decode()
    finally:
        proxy.start()


def test_a_message_tracked_through_a_grpc_group_that_acked_it_and_one_that_holds_it(
    cluster, redis, proxy, mqadmin, traffic, names
):
    """Track for POP consumers: the brokers' pop positions (mqadmin consumerProgress) and the
    clients' own counts are the oracle. A group that popped everything with nothing in flight at
    the poll consumed it; one that holds it (popped, never acked) popped it, ack unknown."""
    from consumers.messages import services

    topic = grpc_topic(mqadmin, names.topic("grpc-track"))
    acking = grpc_group(mqadmin, cluster.namesrv_addrs, names.group("grpc-ack"), topic)
    holding = grpc_group(mqadmin, cluster.namesrv_addrs, names.group("grpc-hold"), topic)
    sent = traffic.produce(topic, 6).sent
    acks = traffic.grpc_consume(proxy.grpc_endpoint, acking, topic, kind="simple")
    holds = traffic.grpc_consume(proxy.grpc_endpoint, holding, topic, kind="simple", mode="slow", ackEvery=1000,
                                 invisibleSeconds=300)  # fmt: skip
    acks.wait_counts(lambda c: c["acked"] >= 6, 90, "acked 6")
    held = holds.wait_counts(lambda c: c["received"] >= 6, 90, "held 6")
    assert held["acked"] == 0

    def popped_all(group: str) -> bool:
        rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-t", topic).out).rows
        return all(r.diff == 0 for r in rows if r.topic == topic)

    for group in (acking, holding):  # the brokers' pop positions are past every message
        wait(lambda group=group: popped_all(group), 30, f"{group} popped all")
    assert poll_cluster(cluster).status == "ok"
    message = sent[3]
    found = services.message(cluster, topic, message.broker, message.queue_id, message.queue_offset)
    verdicts = {g.group: g for g in services.track_message(cluster, found).groups}
    assert verdicts[acking].verdict == "consumed" and "acknowledged" in verdicts[acking].why
    assert verdicts[holding].verdict == "popped" and "in flight at the last poll" in verdicts[holding].why
    rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", holding, "-t", topic).out).rows
    committed = next(r.consumer_offset for r in rows if (r.topic, r.broker, r.queue_id) == (
        topic, message.broker, message.queue_id))  # fmt: skip
    assert verdicts[holding].committed == committed > message.queue_offset
