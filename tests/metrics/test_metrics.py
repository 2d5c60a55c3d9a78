"""/metrics: every value equal to what the API says of the same poll, unknown values absent
(never 0), states as state sets, and who may scrape."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from prometheus_client.parser import text_string_to_metric_families

from consumers.identity import create_token
from consumers.models import Cluster
from tests.support.published import group, publish


@pytest.fixture
def east(db, redis):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    publish(cluster, redis, [group("orders", lag=40), group("audit", lag=7, online=False, topic="Audit")],
            lag_seconds={"audit": None}, dlq={"orders": 3})  # fmt: skip
    return cluster


def bearer(personas, who="viewer") -> dict:
    _, secret = create_token(get_user_model().objects.get(username=personas[who].username), name="prom", days=1)
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def samples(response) -> dict[tuple, float]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain; version=0.0.4")
    found = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def value(found: dict, name: str, **labels):
    return found.get((f"rocketmq_console_{name}", tuple(sorted(labels.items()))))


def test_the_metrics_are_the_api_s_numbers(client, east, personas):
    headers = bearer(personas)
    found = samples(client.get("/metrics", **headers))
    api = {g["group"]: g for g in client.get("/api/groups/", **headers).json()["groups"]}
    orders, audit = api["orders"], api["audit"]
    assert value(found, "group_lag_messages", cluster="east", group="orders") == orders["lag"] == 40
    assert value(found, "group_lag_seconds", cluster="east", group="orders") == orders["lag_seconds"] == 1.0
    assert value(found, "group_dlq_messages", cluster="east", group="orders") == orders["dlq_count"] == 3
    assert value(found, "group_clients", cluster="east", group="orders") == orders["clients"] == 1
    assert value(found, "topic_lag_messages", cluster="east", group="orders", topic="T") == 40
    assert value(found, "topic_lag_messages", cluster="east", group="audit", topic="Audit") == audit["lag"] == 7
    # audit's lag seconds were not measured: no series, not a 0
    assert audit["lag_seconds"] is None
    assert value(found, "group_lag_seconds", cluster="east", group="audit") is None
    assert value(found, "topic_lag_seconds", cluster="east", group="audit", topic="Audit") is None
    # one series per state (13 with PAUSED and RETENTION_RISK), 1 for the state the API gives
    states = {labels[2][1]: v for (name, labels), v in found.items()
              if name == "rocketmq_console_group_health" and dict(labels)["group"] == "orders"}  # fmt: skip
    assert len(states) == 13 and sum(states.values()) == 1 and states[orders["health"]["state"]] == 1
    assert value(found, "group_stale", cluster="east", group="orders") == 0
    assert value(found, "cluster_state", cluster="east", state="ok") == 1
    assert value(found, "broker_state", cluster="east", broker="broker-a", state="ok") == 1
    assert value(found, "cluster_groups", cluster="east") == 2
    assert value(found, "queue_lag_messages", cluster="east", group="orders", topic="T", broker="broker-a",
                 queue_id="0") is None  # per-queue series are off by default  # fmt: skip


def test_per_queue_series_when_turned_on(client, east, personas, settings):
    settings.METRICS_PER_QUEUE = True
    found = samples(client.get("/metrics", **bearer(personas)))
    per_queue = [value(found, "queue_lag_messages", cluster="east", group="orders", topic="T", broker="broker-a",
                       queue_id=str(q)) for q in range(4)]  # fmt: skip
    assert per_queue == [10, 10, 10, 10]


def test_a_cluster_never_polled_has_a_state_and_no_numbers(client, db, redis, personas):
    Cluster.objects.create(name="west", namesrv_addrs="127.0.0.1:9876")
    found = samples(client.get("/metrics", **bearer(personas)))
    assert value(found, "cluster_state", cluster="west", state="never polled") == 1
    assert value(found, "cluster_poll_duration_seconds", cluster="west") is None


def test_who_may_scrape(client, east, personas, settings):
    assert client.get("/metrics").status_code == 401  # no credentials
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert client.post("/metrics").status_code in (401, 405)
    settings.METRICS_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the test client's address
    assert client.get("/metrics").status_code == 200
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics").status_code == 401
    client.force_login(personas["viewer"])
    assert client.get("/metrics").status_code == 200


def test_stack_captures_are_counted_per_group_from_the_audit_log_as_the_scrape_may_see(client, east, personas):
    from consumers import audit
    from consumers.identity import Grant

    for name in ("orders", "orders", "audit"):
        audit.record("capture_stacks", username="operator", cluster="east", group=name, details={"clients": 1})
    audit.record("reset", username="operator", cluster="east", group="orders")  # another action: not counted
    found = samples(client.get("/metrics", **bearer(personas)))
    assert value(found, "stack_captures_total", cluster="east", group="orders") == 2
    assert value(found, "stack_captures_total", cluster="east", group="audit") == 1
    scoped = get_user_model().objects.create_user("ord", password="a-long-enough-password-7")
    Grant.objects.create(subject_kind="user", subject="ord", role="viewer", groups="orders")
    _, secret = create_token(scoped, name="prom", days=1)
    theirs = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {secret}"))
    assert value(theirs, "stack_captures_total", cluster="east", group="orders") == 2
    assert value(theirs, "stack_captures_total", cluster="east", group="audit") is None
