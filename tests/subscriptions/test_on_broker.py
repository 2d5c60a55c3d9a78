"""Subscription config changes on the real cluster, under an online Java consumer. Oracles:
mqadmin getConsumerConfig (each broker's config as the broker prints it), the client's own
received count, and mqadmin consumerProgress."""

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from consumers.audit.models import AuditEvent
from consumers.changes import kinds
from consumers.changes.models import ChangeRequest, State
from consumers.changes.tasks import execute_change
from consumers.changes.workflow import Actor, approve
from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.rocketmq.errors import RequestTimeout
from consumers.rocketmq.ops.actions import Actions
from consumers.rocketmq.remoting import RemotingClient
from consumers.subscriptions import services
from devstack.mqadmin import parse_consumer_config, parse_consumer_progress
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]
BROKERS = {"broker-a", "broker-b"}


class Killed(BaseException):
    """The worker dies here (not an Exception: nothing on the way catches it)."""


def config(mqadmin, group: str, field: str) -> dict[str, str]:
    printed = parse_consumer_config(mqadmin.run("getConsumerConfig", "-g", group).out)
    return {broker: values.get(field) for broker, values in printed.items()}


def lag(mqadmin, group: str, topic: str) -> int:
    rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out).rows
    return sum(r.broker_offset - r.consumer_offset for r in rows if r.topic == topic)


def test_pause_resume_and_a_change_with_a_broker_down_then_undone(
    personas, namesrv, rocketmq, traffic, names, create_topic, mqadmin, settings, monkeypatch, redis, history_dir,
    client,
):  # fmt: skip
    settings.ROCKETMQ_REQUEST_TIMEOUT = 1.5
    settings.CHANGES_EMERGENCY_PAUSE = True
    queued = []
    monkeypatch.setattr(execute_change, "delay", queued.append)  # the test plays the worker
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    operator, approver = Actor(personas["operator"], "10.1.1.1"), Actor(personas["approver"], "10.1.1.2")
    topic, group = create_topic(names.topic("cfg")), names.group("cfg")
    consumer = traffic.consume(group, topic)
    traffic.produce(topic, 8)
    consumer.wait_acked(8, timeout=90)
    assert config(mqadmin, group, "consumeEnable") == {"broker-a": "true", "broker-b": "true"}
    # every field the brokers report is shown, 5.x's nested groupRetryPolicy too, as mqadmin prints it
    shown = {r["field"]: r["values"] for r in services.table(services.read(cluster, group))["rows"]}
    printed = config(mqadmin, group, "groupRetryPolicy")
    assert set(shown["groupRetryPolicy"]) == {"broker-a", "broker-b"}, printed
    for broker, value in shown["groupRetryPolicy"].items():
        assert json.loads(value)["type"] in printed[broker], (value, printed)

    # an emergency pause, approved by its requester (the site allows it), audited as such; the
    # worker dies after the first broker's write and the take-over finishes it
    request = services.request_change(actor=operator, cluster=cluster, group=group, values=services.PAUSE,
                                      reason="poison flood", emergency=True)  # fmt: skip
    assert request.state == State.APPROVED and queued == [request.pk]
    alone = AuditEvent.objects.get(change_request=request, action="approve-alone")
    assert alone.username == "operator" and "emergency" in alone.details["because"]
    original, writes = Actions.create_or_update_subscription_group, []

    async def dies_after_one_write(self, config, addrs):
        await original(self, config, addrs)
        writes.append(config.group_name)
        if len(writes) == 1:
            raise Killed

    monkeypatch.setattr(Actions, "create_or_update_subscription_group", dies_after_one_write)
    kind = kinds.of(request)
    with pytest.raises(Killed):
        kind.execute(request.pk)
    settings.CHANGE_RUN_STALE_SECONDS = 0
    assert kind.execute(request.pk) == State.DONE
    assert kind.execute(request.pk) == "another worker has it"  # delivered again: nothing more
    settings.CHANGE_RUN_STALE_SECONDS = 120
    paused = ChangeRequest.objects.get(pk=request.pk)
    # the take-over kept the first reading: what the brokers had before the pause
    assert paused.result["replaced"] == {b: {"consumeEnable": True} for b in BROKERS}
    assert config(mqadmin, group, "consumeEnable") == {"broker-a": "false", "broker-b": "false"}

    # paused: the brokers refuse the client's pulls; new messages wait (lag), none delivered
    received = len(consumer.deliveries)
    traffic.produce(topic, 6)
    wait(lambda: lag(mqadmin, group, topic) == 6, 30, "six messages waiting")
    time.sleep(6)  # longer than the client's 3 s back-off after a refused pull: it would have pulled twice
    assert len(consumer.deliveries) == received and lag(mqadmin, group, topic) == 6
    poll_cluster(cluster)
    assert snapshots.read_detail(redis, cluster.pk, group).health["state"] == "PAUSED"  # not STALLED: no alarm
    client.force_login(personas["viewer"])
    page = client.get(reverse("consumers:group-detail", args=["local", group]))
    assert 'id="paused-banner"' in page.content.decode() and "broker-a, broker-b" in page.content.decode()
    shown = client.get(reverse("consumers:api-group-config", args=["local", group])).json()
    assert shown["paused_on"] == ["broker-a", "broker-b"] and shown["brokers"] == ["broker-a", "broker-b"]

    # resume: four eyes; the client gets the six
    resume = services.request_change(actor=operator, cluster=cluster, group=group, values=services.RESUME,
                                     reason="fixed")  # fmt: skip
    assert resume.state == State.PENDING
    approve(resume, actor=approver)
    assert kinds.of(resume).execute(resume.pk) == State.DONE
    consumer.wait_acked(14, timeout=60)
    assert config(mqadmin, group, "consumeEnable") == {"broker-a": "true", "broker-b": "true"}

    # retryMaxTimes 16 -> 3, broker-b frozen when it runs: partial, naming broker-b
    change = services.request_change(actor=operator, cluster=cluster, group=group, values={"retryMaxTimes": 3},
                                     reason="fewer retries")  # fmt: skip
    assert {r["broker"]: r["before"] for r in change.plan["brokers"]} == {b: {"retryMaxTimes": 16} for b in BROKERS}
    approve(change, actor=approver)
    # broker-b does not answer the console while the change runs. Injected in the console's own
    # client, not by freezing the process: broker-b is the session's, shared with the tests on the
    # other worker, whose consumers and polls a frozen broker disturbed (a rebalance timeline lost
    # hand-overs when the two overlapped).
    silent = rocketmq.brokers["broker-b"].address
    answering = RemotingClient.call

    async def broker_b_silent(self, address, *args, **kwargs):
        if address == silent:
            raise RequestTimeout(f"{address}: no answer within {settings.ROCKETMQ_REQUEST_TIMEOUT} s (injected)")
        return await answering(self, address, *args, **kwargs)

    monkeypatch.setattr(RemotingClient, "call", broker_b_silent)
    assert kinds.of(change).execute(change.pk) == State.PARTIAL
    monkeypatch.setattr(RemotingClient, "call", answering)
    change.refresh_from_db()
    assert set(change.result["applied"]) == {"broker-a"} and set(change.result["failed"]) == {"broker-b"}
    assert change.result["read_back"]["broker-a"]["ok"]
    assert config(mqadmin, group, "retryMaxTimes") == {"broker-a": "3", "broker-b": "16"}
    shown = client.get(reverse("consumers:config-page", args=["local", group])).content.decode()
    assert 'data-field="retryMaxTimes" class="bad"' in shown  # the brokers differ, and the page says so

    # undo: broker-a back to 16 (broker-b was never changed), through a new approval
    undo = kinds.of(change).actions["undo"](change, actor=operator, reason="back")
    assert undo.undo_of_id == change.pk and undo.params == {"per_broker": {"broker-a": {"retryMaxTimes": 16}}}
    approve(undo, actor=approver)
    assert kinds.of(undo).execute(undo.pk) == State.DONE
    assert config(mqadmin, group, "retryMaxTimes") == {"broker-a": "16", "broker-b": "16"}
    result = AuditEvent.objects.get(change_request=undo, action="result").details
    assert result["before"] == {"broker-a": {"retryMaxTimes": 3}} and result["after"] == {
        "broker-a": {"retryMaxTimes": 16}
    }
