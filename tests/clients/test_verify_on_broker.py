"""Consumption verification on the real cluster: a stored message delivered, as an approved
change, to a client whose listener throws shows the exception the client reported; to a healthy
client, success; each delivered exactly once by the harness's own count, audited, and refused at
request time for a client that is not online."""

from __future__ import annotations

import json

import pytest

from consumers.audit.models import AuditEvent
from consumers.changes import workflow
from consumers.changes.guards import Actor
from consumers.changes.models import ChangeRequest, State
from consumers.clients import kind
from consumers.models import Cluster
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def runs_of(consumer, msg_id: str) -> list[dict]:
    """The client's own record of each time its listener ran on the message."""
    return [e for e in consumer.events() if e.get("msgId") == msg_id and e["event"] in ("received", "acked")
            and e.get("result") != "acked"]  # fmt: skip


def test_a_message_verified_with_a_throwing_and_a_healthy_client(
    namesrv, names, create_topic, traffic, personas, client
):
    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    topic = create_topic(names.topic("verify"))
    healthy, throwing = names.group("verify-ok"), names.group("verify-throw")
    sent = traffic.produce(topic, 6).sent
    target = sent[2]
    good = traffic.consume(healthy, topic)
    bad = traffic.consume(throwing, topic, mode="throwing", failKeys=[target.key], maxReconsumeTimes=0)
    good.wait_acked(6)
    wait(lambda: runs_of(bad, target.msg_id), 60, "the throwing client ran on the message")
    client.force_login(personas["operator"])
    position = {"topic": topic, "broker": target.broker, "queue_id": target.queue_id, "offset": target.queue_offset}

    def verified(group: str, consumer) -> ChangeRequest:
        body = {"kind": "verify", "cluster": "local", "group": group, "reason": "check the fix before the redrive",
                "params": {"client_id": consumer.client_id, "messages": [position]}}  # fmt: skip
        made = client.post("/api/changes/", json.dumps(body), content_type="application/json")
        assert made.status_code == 201, made.content
        request = ChangeRequest.objects.get(pk=made.json()["id"])
        assert request.plan["client"]["client_id"] == consumer.client_id
        before = len(runs_of(consumer, target.msg_id))
        workflow.approve(request, actor=Actor(personas["approver"], "10.0.0.2"))
        kind.run(request.pk)  # what the worker does with execute_change
        wait(lambda: len(runs_of(consumer, target.msg_id)) > before, 30, "the client's record of the run")
        assert len(runs_of(consumer, target.msg_id)) == before + 1  # delivered once
        return ChangeRequest.objects.get(pk=request.pk)

    failed = verified(throwing, bad)
    [answer] = failed.result["answers"].values()
    assert failed.state == State.DONE and answer["result"] == "CR_THROW_EXCEPTION"
    assert f"inventory down: cannot reserve {target.key}" in answer["remark"]
    ok = verified(healthy, good)
    [answer] = ok.result["answers"].values()
    assert ok.state == State.DONE and answer["result"] == "CR_SUCCESS"
    assert AuditEvent.objects.filter(change_request=ok, action="approve", username="approver").exists()
    page = client.get(f"/changes/{failed.pk}/").content.decode()
    assert 'data-result="CR_THROW_EXCEPTION"' in page and "inventory down" in page

    body = {"kind": "verify", "cluster": "local", "group": healthy, "reason": "r",
            "params": {"client_id": "10.0.0.9@nobody", "messages": [position]}}  # fmt: skip
    refused = client.post("/api/changes/", json.dumps(body), content_type="application/json")
    assert refused.status_code == 409 and "not an online client" in refused.json()["error"]
    good.stop()
    bad.stop()
