"""The verification's run when no broker of the cluster answers at all: each message gets that
as its answer and the run ends (it used to escape and leave the request running until a
take-over)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from consumers.changes.models import ChangeRequest, State
from consumers.clients import kind, verify_run
from consumers.models import Cluster
from consumers.rocketmq import RocketMQError

pytestmark = pytest.mark.django_db


def test_an_unreachable_cluster_is_each_message_answer_and_the_run_ends(personas, monkeypatch):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    rows = [{"label": f"t@b#0:{n}", "topic": "t", "broker": "b", "queue_id": 0, "offset": n,
             "offset_msg_id": f"ID{n}"} for n in (4, 5)]  # fmt: skip
    now = timezone.now()
    request = ChangeRequest.objects.create(
        cluster=cluster, group="g", kind=ChangeRequest.Kind.VERIFY, state=State.APPROVED, reason="r",
        params={"client_id": "10.0.0.1@1", "messages": []}, plan={"messages": rows, "brokers": []},
        requested_by=personas["operator"], planned_at=now, expires_at=now,
    )  # fmt: skip
    asked = []

    def unreachable(cluster, work):
        asked.append(cluster.name)
        raise RocketMQError("no name server answered: 127.0.0.1:1")

    monkeypatch.setattr(verify_run, "run_on_cluster", unreachable)
    assert kind.run(request.pk) == State.FAILED
    ended = ChangeRequest.objects.get(pk=request.pk)
    assert asked == ["east", "east"]  # each message tried once
    assert ended.result["asked"] == ["t@b#0:4", "t@b#0:5"]
    assert {a["error"] for a in ended.result["answers"].values()} == {
        "RocketMQError: no name server answered: 127.0.0.1:1"
    }
    assert ended.finished_at is not None
