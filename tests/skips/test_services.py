"""The skip's parts that need no broker: its bound, the pinned check's words, the DLQ copy, the
registration with the workflow, and the group page's way to it."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from consumers.changes import kinds
from consumers.changes.models import ChangeRequest
from consumers.models import Cluster
from consumers.resets.strategies import InvalidReset
from consumers.rocketmq.message import Message
from consumers.skips import services


@pytest.mark.parametrize("count", [0, services.MAX_MESSAGES + 1])
def test_a_skip_moves_past_one_to_a_few_messages(count):
    cluster = Cluster(name="east", namesrv_addrs="127.0.0.1:1")  # never read: refused before
    with pytest.raises(InvalidReset, match=f"not {count}"):
        services.plan(cluster, "g", services.Position("T", "broker-a", 0, 7), count=count, copy_to_dlq=True)


def test_a_group_that_moved_by_itself_is_not_skipped():
    assert services.moved_on("T@broker-a#0", 7, 7) is None
    assert "is now 9, not 7" in services.moved_on("T@broker-a#0", 7, 9)
    assert "is now None, not 7" in services.moved_on("T@broker-a#0", 7, None)


def test_the_dlq_copy_says_where_it_came_from_and_who_skipped_it_why(personas):
    skip = {"topic": "orders", "broker": "broker-a", "queue_id": 2, "offset": 7}
    request = ChangeRequest(pk=41, group="billing", reason="poison: order 4711", requested_by=personas["operator"],
                            params={"skip": skip})  # fmt: skip
    message = Message(topic="orders", queue_id=2, queue_offset=7, physical_offset=1007, sys_flag=0, flag=0,
                      born_timestamp=0, born_host="127.0.0.1:1", store_timestamp=7, store_host="127.0.0.1:2",
                      reconsume_times=0, prepared_transaction_offset=0, body_crc=0, stored_body=b"{}", body=b"{}",
                      properties={"KEYS": "4711", "TAGS": "paid", "UNIQ_KEY": "C0A8", "MAX_OFFSET": "9"})  # fmt: skip
    copy = services.copy_of(request, message)
    assert copy.topic == "%DLQ%billing" and copy.body == b"{}"
    assert copy.properties == {
        "KEYS": "4711", "TAGS": "paid", "ORIGIN_MESSAGE_ID": message.msg_id, "RETRY_TOPIC": "orders",
        "SKIPPED_BY": personas["operator"].username, "SKIP_REASON": "poison: order 4711", "SKIP_REQUEST": "41",
    }  # fmt: skip
    # fixed by the request and the position: a take-over looks for exactly this id
    assert (
        copy.unique_key
        == services.copy_key(41, "orders@broker-a#2", 7)
        != services.copy_key(42, "orders@broker-a#2", 7)
    )


def test_the_kind_is_registered_with_the_workflow_and_the_api():
    kind = kinds.of(ChangeRequest(kind=ChangeRequest.Kind.SKIP))
    assert kind.detail_template == "skips/_skipped.html" and set(kind.actions) == {"refresh", "undo"}
    assert kinds.creatable()["skip"].api_params is services.API_PARAMS
    assert [name for name, k in kinds.creatable().items() if k.api_default] == ["reset"]


def test_the_group_page_links_each_pinned_queue_to_its_skip_page():
    pinned = [{"topic": "orders", "broker": "broker-a", "queue_id": 2, "offset": 7}]
    stalled = {"state": "STALLED", "findings": [{"state": "STALLED", "evidence": "stuck", "pinned": pinned}]}
    doc = {"health": stalled, "queues": []} | dict.fromkeys(["stale_reason", "clients_note", "consume_tps_note"], "")
    doc |= dict.fromkeys(["lag", "lag_seconds", "retry_lag", "dlq_count", "consume_tps", "clients", "in_flight"], 1)
    context = {"cluster": Cluster(name="east"), "group": "billing", "doc": doc, "age": 3, "state": {"polled_age": 3}}
    html = render_to_string("consumers/partials/_group_state.html", context)
    assert reverse("consumers:skip-form", args=["east", "billing", "orders", "broker-a", 2, 7]) in html
