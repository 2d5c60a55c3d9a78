"""Abandoned groups (consumers/lifecycle/): when each group was last seen online, kept from the
polls; the page and the API list those past the threshold with what watches them, scoped."""

from __future__ import annotations

import time

from consumers.alerts.models import AlertRule
from consumers.identity import Grant
from consumers.lifecycle import seen
from consumers.live import snapshots
from consumers.models import Cluster
from devstack.synthetic import group, publish

DAY = 86400.0


def test_the_polls_keep_when_each_group_was_last_online_and_since_when_they_watch(db, redis):
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    publish(east, redis, [group("orders", lag=3), group("old", lag=5, online=False)])
    found, since = seen.last_online(redis, east.pk)
    assert set(found) == {"orders"} and since is not None and abs(found["orders"] - since) < 1
    seen.on_poll(cluster=east, documents=None, polled_at=time.time() + 60)  # a failed poll saw nobody
    assert seen.last_online(redis, east.pk) == (found, since)


def test_groups_without_a_client_for_the_days_are_listed_with_what_watches_them(db, redis, personas, client,
                                                                                 viewer_client):  # fmt: skip
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    publish(east, redis, [group("payments-old", lag=5, online=False), group("orders-old", lag=2, online=False),
                          group("orders", lag=1)])  # fmt: skip
    now = time.time()
    # as the polls would have left it: orders-old last online 10 days ago, payments-old never
    # since the console began watching 30 days ago, orders online now
    redis.hset(snapshots.key(east.pk, "last-online"), mapping={"orders-old": now - 10 * DAY, "orders": now})
    redis.set(snapshots.key(east.pk, "watching-since"), now - 30 * DAY)
    AlertRule.objects.create(name="stopped orders", condition="state", states=["STOPPED"], group_pattern="orders-*")
    AlertRule.objects.create(name="all lag", condition="lag_seconds", threshold=60)
    Grant.objects.create(subject_kind="idp_group", subject="payments", role="viewer", groups="payments-*")
    body = viewer_client.get("/api/groups/abandoned/").json()
    assert body["days"] == 7
    assert [(g["group"], g["last_online"] is None, g["alert_rules"], g["teams"]) for g in body["groups"]] == [
        ("payments-old", True, ["all lag"], ["payments"]),
        ("orders-old", False, ["all lag", "stopped orders"], []),
    ]  # the longest abandoned first
    assert body["groups"][1]["last_online"] == now - 10 * DAY and body["groups"][0]["lag"] == 5
    longer = viewer_client.get("/api/groups/abandoned/?days=20").json()["groups"]
    assert [g["group"] for g in longer] == ["payments-old"]
    assert viewer_client.get("/api/groups/abandoned/?days=-1").status_code == 400
    assert viewer_client.get("/api/groups/abandoned/?days=x").status_code == 400
    page = viewer_client.get("/groups/abandoned/").content.decode()
    assert 'data-group="payments-old"' in page and 'data-group="orders-old"' in page
    assert 'data-group="orders"' not in page
    assert viewer_client.get("/groups/abandoned/?days=x").status_code == 400
    # the groups list's filter: the same groups, among the list's others
    idle = viewer_client.get("/api/groups/?idle_days=7&sort=group&dir=asc").json()["groups"]
    assert [g["group"] for g in idle] == ["orders-old", "payments-old"]
    assert [g["group"] for g in viewer_client.get("/api/groups/?idle_days=20").json()["groups"]] == ["payments-old"]
    assert len(viewer_client.get("/api/groups/").json()["groups"]) == 3
    listed = viewer_client.get("/groups/?idle_days=20").content.decode()
    assert 'data-group="payments-old"' in listed and 'data-group="orders-old"' not in listed
    # a user whose grants cover payments-* only sees that one
    scoped = personas["viewer"].__class__.objects.create_user("pay", password="a-long-enough-password-9")
    Grant.objects.create(subject_kind="user", subject="pay", role="viewer", groups="payments-*")
    client.force_login(scoped)
    assert [g["group"] for g in client.get("/api/groups/abandoned/").json()["groups"]] == ["payments-old"]
