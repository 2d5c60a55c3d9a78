"""The config change's parts that need no broker: what may be set (and what is refused before
any broker is read), the page's table of brokers that differ, the emergency rule, and the API."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from consumers.changes.guards import ChangeRefused
from consumers.changes.models import ChangeRequest
from consumers.changes.workflow import Actor
from consumers.models import Cluster
from consumers.subscriptions import services


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        ({}, "say which fields"),
        ({"groupName": "x"}, "cannot be changed here"),
        ({"consumeEnable": "false"}, "true or false"),
        ({"retryMaxTimes": 65}, "from -1 to 64"),
        ({"retryMaxTimes": True}, "whole number"),
        ({"retryMaxTimes": 2.5}, "whole number"),
    ],
)
def test_only_known_fields_of_the_right_kind_may_be_set(values, refusal):
    with pytest.raises(ChangeRefused, match=refusal):
        services.parse_values(values)


def test_parse_keeps_what_is_asked():
    assert services.parse_values({"retryMaxTimes": -1, "consumeEnable": False}) == {
        "retryMaxTimes": -1,
        "consumeEnable": False,
    }


def test_the_table_flags_fields_the_brokers_differ_on_and_names_the_paused_and_unreadable():
    brokers = {
        "broker-a": {
            "address": "a",
            "config": {
                "groupName": "g",
                "retryMaxTimes": 3,
                "consumeEnable": False,
                "subscriptionDataSet": [],
                "brokerId": 0,
                "groupRetryPolicy": {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 5000]}},
            },
        },  # fmt: skip
        "broker-b": {
            "address": "b",
            "config": {
                "groupName": "g",
                "retryMaxTimes": 16,
                "consumeEnable": True,
                "brokerId": 0,
                "groupRetryPolicy": {"type": "CUSTOMIZED"},
            },  # fmt: skip
        },  # fmt: skip
        "broker-c": {"address": "c", "config": None},
        "broker-d": {"address": "d", "error": "DeadlineExceeded: 1.5 s"},
    }
    table = services.table(brokers)
    rows = {r["field"]: r for r in table["rows"]}
    # no name, no subscriptions; 5.x's retry policy as the JSON each broker holds
    assert set(rows) == {"brokerId", "consumeEnable", "groupRetryPolicy", "retryMaxTimes"}
    assert rows["groupRetryPolicy"]["values"] == {
        "broker-a": '{"customizedRetryPolicy": {"next": [1000, 5000]}, "type": "CUSTOMIZED"}',
        "broker-b": '{"type": "CUSTOMIZED"}',
    }
    assert rows["groupRetryPolicy"]["differs"] and not rows["groupRetryPolicy"]["editable"]
    assert rows["retryMaxTimes"]["differs"] and rows["consumeEnable"]["differs"] and not rows["brokerId"]["differs"]
    assert rows["retryMaxTimes"]["values"] == {"broker-a": 3, "broker-b": 16} and rows["retryMaxTimes"]["editable"]
    assert table["paused_on"] == ["broker-a"] and table["missing"] == ["broker-c"]
    assert table["unreadable"] == [{"broker": "broker-d", "reason": "DeadlineExceeded: 1.5 s"}]


@pytest.mark.django_db
def test_an_emergency_is_refused_unless_the_site_allows_it_and_it_is_a_pause(personas, settings):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")  # never read: refused before
    operator = Actor(personas["operator"], "10.0.0.1")
    for allowed, values in ((False, services.PAUSE), (True, services.RESUME), (True, {"retryMaxTimes": 3})):
        settings.CHANGES_EMERGENCY_PAUSE = allowed
        with pytest.raises(ChangeRefused, match="only a pause") as refused:
            services.request_change(actor=operator, cluster=cluster, group="g", values=values, reason="now",
                                    emergency=True)  # fmt: skip
        assert refused.value.status == 403
    assert not ChangeRequest.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_bad_values_before_reading_a_broker(personas, client):
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    client.force_login(personas["operator"])
    url = reverse("consumers:api-changes")
    for params, field in (({"set": {"retryMaxTimes": "3"}}, "retryMaxTimes"), ({"set": {"nope": 1}}, "nope"),
                          ({}, "set")):  # fmt: skip
        body = {"cluster": "east", "group": "g", "kind": "config", "params": params, "reason": "why"}
        answer = client.post(url, json.dumps(body), content_type="application/json")
        assert answer.status_code == 400 and field in answer.content.decode(), answer.content
    assert not ChangeRequest.objects.exists()
