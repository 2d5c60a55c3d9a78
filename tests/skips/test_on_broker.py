"""A poison message skipped on the real cluster, under an online orderly Java client that
suspends on it forever. Oracles: the client's own deliveries and acks, mqadmin
consumerProgress, and the group's DLQ read back from the broker."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from consumers.audit.models import AuditEvent
from consumers.changes import kinds
from consumers.changes.models import State
from consumers.changes.workflow import Actor, approve
from consumers.models import Cluster
from consumers.rocketmq.codes import dlq_topic
from consumers.rocketmq.ops.actions import Actions
from consumers.skips import services
from devstack.mqadmin import parse_consumer_progress
from tests.dlq.test_dlq import target_messages
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


class Killed(BaseException):
    """The worker dies here (not an Exception: nothing on the way catches it)."""


def committed(mqadmin, group: str, topic: str) -> dict[str, int]:
    rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out).rows
    return {f"{r.topic}@{r.broker}#{r.queue_id}": r.consumer_offset for r in rows if r.topic == topic}


def test_a_poison_message_is_skipped_once_kept_in_the_dlq_and_the_orderly_client_moves_on(
    personas, namesrv, traffic, names, create_topic, mqadmin, settings, monkeypatch, client, redis
):
    # the Java client pauses ~10 s in a reset and may commit its old position meanwhile
    settings.RESET_VERIFY_SECONDS = 17
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    topic, group = create_topic(names.topic("poison"), queues=1), names.group("poison")
    sent = traffic.produce(topic, 12).sent
    per_queue = Counter((m.broker, m.queue_id) for m in sent)
    poison = next(m for m in sent if 1 <= m.queue_offset < per_queue[(m.broker, m.queue_id)] - 1)
    label = f"{topic}@{poison.broker}#{poison.queue_id}"
    behind = [m for m in sent if (m.broker, m.queue_id) == (poison.broker, poison.queue_id)
              and m.queue_offset > poison.queue_offset]  # fmt: skip
    consumer = traffic.consume(group, topic, mode="failing", orderly=True, failKeys=[poison.key])
    consumer.wait_acked(len(sent) - 1 - len(behind), timeout=90)
    wait(lambda: committed(mqadmin, group, topic).get(label) == poison.queue_offset, 60, "pinned at the poison")
    assert not consumer.acked_ids & {m.msg_id for m in [poison, *behind]}  # stuck: nothing behind it went

    at = services.Position(topic, poison.broker, poison.queue_id, poison.queue_offset)
    request = services.request_skip(actor=Actor(personas["operator"], "10.1.1.1"), cluster=cluster, group=group,
                                    at=at, count=1, copy_to_dlq=True, reason="poison: order 4711")  # fmt: skip
    assert [m["msg_id"] for m in request.plan["skipped"]] == [poison.msg_id]
    approve(request, actor=Actor(personas["approver"], "10.1.1.2"))

    # the worker dies right after the broker stored the DLQ copy, before it was recorded
    original, calls = Actions.send_messages, []

    async def dies_after_sending(self, messages, **kwargs):
        answers = await original(self, messages, **kwargs)
        calls.append(messages)
        if len(calls) == 1:
            raise Killed
        return answers

    monkeypatch.setattr(Actions, "send_messages", dies_after_sending)
    kind = kinds.of(request)
    with pytest.raises(Killed):
        kind.execute(request.pk)
    request.refresh_from_db()
    assert request.state == State.RUNNING and not request.result.get("copied") and not request.result["applied"]

    # taken over: the copy is found in the DLQ's index, not sent again; then the offset moves
    settings.CHANGE_RUN_STALE_SECONDS = 0
    assert kind.execute(request.pk) == State.DONE
    assert kind.execute(request.pk) == "another worker has it"  # the task delivered again: nothing more
    done = type(request).objects.get(pk=request.pk)
    assert len(calls) == 1, "the copy was sent again after the take-over"
    assert done.result["replaced"] == {label: poison.queue_offset}
    assert done.result["applied"] == {label: poison.queue_offset + 1}, json.dumps(done.result)
    assert list(done.result["copied"]) == [str(poison.queue_offset)]

    dead = [m for m in target_messages(namesrv, dlq_topic(group)) if m.properties.get("SKIP_REQUEST") == str(done.pk)]
    assert len(dead) == 1
    assert dead[0].properties["ORIGIN_MESSAGE_ID"] == poison.msg_id and dead[0].body == poison.body
    assert dead[0].properties["SKIPPED_BY"] == personas["operator"].username
    assert dead[0].properties["SKIP_REASON"] == "poison: order 4711" and dead[0].keys == [poison.key]

    # the client moves on: everything behind the poison is consumed, and the broker says so
    consumer.wait_delivered(lambda d: {m.msg_id for m in behind} <= consumer.acked_ids, 90, "the rest consumed")
    wait(lambda: committed(mqadmin, group, topic).get(label) == per_queue[(poison.broker, poison.queue_id)], 60,
         "the queue consumed to its end")  # fmt: skip
    assert poison.msg_id not in consumer.acked_ids

    # the track names the skip and its copy (which has an id of its own), not "consumed"; a
    # message behind it on the same queue was consumed
    client.force_login(personas["viewer"])
    base = f"/api/messages/local/{topic}/{poison.broker}/{poison.queue_id}"
    mine = next(g for g in client.get(f"{base}/{poison.queue_offset}/track/").json()["groups"] if g["group"] == group)
    assert mine["verdict"] == "skipped" and f"change #{done.pk}" in mine["why"], mine
    assert [(c["kind"], c["topic"], c["broker"], c["offset"]) for c in mine["copies"]] == [
        ("dlq", dlq_topic(group), poison.broker, dead[0].queue_offset)  # the DLQ is made on its broker
    ], mine
    tracked = client.get(f"{base}/{behind[0].queue_offset}/track/").json()["groups"]
    after = next(g for g in tracked if g["group"] == group)
    assert after["verdict"] == "consumed", after

    logged = AuditEvent.objects.filter(change_request=done, action="request").get()
    assert logged.details["params"]["skip"]["msg_ids"] == [poison.msg_id]
    assert AuditEvent.objects.filter(change_request=done, action="resume").exists()
