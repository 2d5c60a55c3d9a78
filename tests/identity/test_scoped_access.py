"""Grants scope every read and write: every URL of the access table walked as users whose
grants cover the payments team's groups only (by user, local group and IdP group), against a
world whose requests, jobs, alerts and messages are the orders team's. Outside the scope a
URL answers 404 as for a name that does not exist, and no page, list, count or download names
the orders group. Four eyes across the scope: an approver decides only within theirs."""

from __future__ import annotations

import dataclasses
import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.urls import get_resolver

from consumers.audit import record
from consumers.audit.models import AuditEvent
from consumers.changes import workflow
from consumers.changes.guards import ChangeRefused
from consumers.changes.workflow import Actor
from consumers.identity import Grant
from consumers.live.documents import ProxyState
from consumers.models import Cluster
from tests.identity import test_access
from tests.identity.test_access import PLAN, _send, _urls
from tests.support.published import group, publish

world = test_access.world  # the access test's world of one of everything, as a fixture here too

# the URLs of the world that name the orders team's things: its group, its request, its redrive
# job, its alert, the topic only its group consumes, a report made by someone who sees all
ORDERS_URL_ARGS = {"group", "topic"}
ORDERS_PK = ("change", "dlq-job", "alert", "report")


@pytest.fixture
def teams(world, redis, personas):
    """east's last poll: orders (the world's) and two payments groups; scoped users."""
    east = Cluster.objects.get(name="east")
    publish(east, redis, [group("orders", lag=40, topic="orders"), group("payments-web", lag=5, topic="pay"),
                          group("payments-api", lag=1, topic="pay")])  # fmt: skip
    record("reset-request", username="operator", cluster="east", group="orders", details={})
    record("reset-request", username="operator", cluster="east", group="payments-web", details={})
    User = get_user_model()
    users = {}
    for role in ("viewer", "operator", "approver", "admin"):
        users[f"pay-{role}"] = User.objects.create_user(f"pay-{role}")
        Grant.objects.create(subject_kind="user", subject=f"pay-{role}", role=role, clusters="east",
                             groups="payments-*")  # fmt: skip
    # the same scope through a local group and through an identity provider's group
    local = User.objects.create_user("pay-local")
    local.groups.add(Group.objects.create(name="payments-team"))
    Grant.objects.create(
        subject_kind="group", subject="payments-team", role="viewer", clusters="*", groups="payments-*"
    )
    sso = User.objects.create_user("pay-sso")
    sso.groups.add(Group.objects.create(name="idp:payments"))
    Grant.objects.create(subject_kind="idp_group", subject="payments", role="operator", clusters="e*",
                         groups="payments-web payments-api")  # fmt: skip
    users["pay-local"], users["pay-sso"] = local, sso
    # someone whose grants are on another cluster only
    users["west-viewer"] = User.objects.create_user("west-viewer")
    Grant.objects.create(subject_kind="user", subject="west-viewer", role="viewer", clusters="west", groups="*")
    return users


def _names_orders(name: str, url: str) -> bool:
    pattern = {p.name: p for p in get_resolver("consumers.urls").url_patterns}[name]
    if ORDERS_URL_ARGS & set(pattern.pattern.converters):
        return True
    return "pk" in pattern.pattern.converters and any(kind in name for kind in ORDERS_PK)


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.parametrize("who", ["pay-viewer", "pay-operator", "pay-approver", "pay-admin", "pay-local", "pay-sso",
                                 "west-viewer"])  # fmt: skip
def test_outside_the_scope_everything_is_not_found_and_nothing_is_named(client, world, teams, who):
    client.force_login(teams[who])
    wrong = []
    for name, method, url in _urls(world):
        response = _send(client, method, name, url)
        status = response.status_code
        if _names_orders(name, url) and status != 404:
            wrong.append(f"{method} {url}: {status}, not 404")
        elif status >= 500 and status != 502:
            wrong.append(f"{method} {url}: {status}")
        elif status < 300 and b"orders" in _body(response):
            wrong.append(f"{method} {url}: {status} names the orders group")
    assert not wrong, "\n".join(wrong)


def test_the_same_walk_as_a_viewer_of_everything_does_name_orders(client, world, teams, personas):
    """The check above can fail: a global viewer's lists do name the group."""
    client.force_login(personas["viewer"])
    named = [url for name, method, url in _urls(world) if method == "GET" and b"orders" in _body(client.get(url))]
    assert {"/", "/groups/", "/changes/", "/audit/", "/alerts/", "/api/groups/", "/metrics"} <= set(named)


def test_within_the_scope_the_pages_show_the_teams_groups_and_counts(client, world, teams):
    client.force_login(teams["pay-sso"])
    groups = client.get("/api/groups/").json()
    assert sorted(g["group"] for g in groups["groups"]) == ["payments-api", "payments-web"] and groups["total"] == 2
    assert client.get("/api/clusters/").json()["clusters"][0]["groups"] == 2  # of 3 on the cluster
    assert client.get("/groups/east/payments-web/").status_code == 200
    assert client.get("/api/groups/east/payments-api/").json()["group"] == "payments-api"
    assert client.get("/groups/east/payments-web/reset/").status_code == 200
    audit = client.get("/audit/").content
    assert b"payments-web" in audit and b"orders" not in audit
    metrics = client.get("/metrics").content.decode()
    assert 'group="payments-web"' in metrics and 'group="orders"' not in metrics
    # the local group's member sees the same groups, read-only
    client.force_login(teams["pay-local"])
    assert client.get("/api/groups/").json()["total"] == 2
    response = client.post("/groups/east/payments-web/reset/request/", {"strategy": "earliest", "reason": "replay"})
    assert response.status_code == 403 and b"operator role" in response.content


def test_the_clusters_page_counts_only_the_teams_groups_behind_a_proxy_and_hides_the_brokers_rates(
    client, world, teams, personas, redis
):
    """A proxy with clients of orders and of another team's group, none of payments: a payments
    user sees 0 groups there, not 2, and not the brokers' cluster-wide put and get TPS."""
    east = Cluster.objects.get(name="east")
    proxy = ProxyState("127.0.0.1:8081", "ok", None, 2, time.time(), group_names=["orders", "billing-grpc"])
    publish(east, redis, [group("orders", lag=40, topic="orders"), group("payments-web", lag=5, topic="pay")],
            proxies=[proxy])  # fmt: skip

    def rows(user) -> tuple[str, str]:
        client.force_login(user)
        page = client.get("/clusters/").content.decode()
        return (re.search(r'<tr class="proxy".*?</tr>', page, re.S).group(0),
                re.search(r'<tr class="broker".*?</tr>', page, re.S).group(0))  # fmt: skip

    proxy_row, broker_row = rows(teams["pay-viewer"])
    assert re.search(r'<td class="num">\s*0\s*</td>', proxy_row), proxy_row
    assert "outside your scope" in broker_row and "1.5" not in broker_row and "2.5" not in broker_row
    proxy_row, broker_row = rows(personas["viewer"])  # the check can fail: everything's viewer sees both
    assert re.search(r'<td class="num">\s*2\s*</td>', proxy_row) and "1.5" in broker_row and "2.5" in broker_row


def test_a_user_with_no_grant_sees_nothing(client, world, teams):
    nobody = get_user_model().objects.create_user("newcomer")
    nobody.groups.add(Group.objects.create(name="idp:interns"))  # an IdP group no grant names
    client.force_login(nobody)
    assert client.get("/groups/").status_code == 403
    assert client.get("/api/groups/").status_code == 403


def test_losing_the_idp_group_takes_the_scope_away_at_the_next_request(client, world, teams):
    client.force_login(teams["pay-sso"])
    assert client.get("/api/groups/east/payments-web/").status_code == 200
    teams["pay-sso"].groups.clear()  # what the next sign-in does when the IdP dropped the group
    assert client.get("/api/groups/east/payments-web/").status_code == 403


def _change(user, group: str, params=None):
    east = Cluster.objects.get(name="east")
    return workflow.submit(actor=Actor(user), cluster=east, group=group, kind="reset",
                           params=params or {"strategy": "earliest"}, plan=PLAN, reason="replay")  # fmt: skip


def test_an_approver_decides_only_within_their_scope(world, teams, personas):
    payments = _change(teams["pay-operator"], "payments-web")
    orders = Grant.objects.create(subject_kind="user", subject="orders-approver", role="approver", clusters="east",
                                  groups="orders")  # fmt: skip
    outsider = get_user_model().objects.create_user(orders.subject)
    with pytest.raises(ChangeRefused) as refused:
        workflow.reject(payments, actor=Actor(outsider), reason="not mine")
    assert refused.value.status == 403 and "payments-web" in str(refused.value)
    assert workflow.reject(payments, actor=Actor(teams["pay-approver"]), reason="wrong group").state == "rejected"


@pytest.fixture
def unchanged_broker(monkeypatch):
    """The world's broker is a closed port: the effect is taken as unchanged since the plan."""
    from consumers.changes import kinds

    monkeypatch.setitem(
        kinds._KINDS, "reset", dataclasses.replace(kinds._KINDS["reset"], effect_changed=lambda r: None)
    )


def test_a_two_team_change_needs_an_approver_of_each_team(client, world, teams, personas, unchanged_broker):
    """A copy into payments-web from orders touches both teams: the payments approver approves
    their part, the request waits for the orders team's, and only then runs."""
    copy = _change(personas["operator"], "payments-web", {"strategy": "copy", "source_group": "orders"})
    part = workflow.approve(copy, actor=Actor(teams["pay-approver"]))
    assert part.state == "pending" and part.approvals[0]["groups"] == ["payments-web"]
    with pytest.raises(ChangeRefused, match="waiting for an approver of orders"):
        workflow.approve(part, actor=Actor(teams["pay-admin"]))  # the same team again adds nothing
    orders = get_user_model().objects.create_user("orders-approver")
    Grant.objects.create(subject_kind="user", subject="orders-approver", role="approver", clusters="east",
                         groups="orders")  # fmt: skip
    client.force_login(orders)  # the orders team sees the request that reads its group
    page = client.get(f"/changes/{copy.pk}/").content.decode()
    assert 'id="approvals"' in page and "Waiting for an approver of orders" in page and 'id="approve"' in page
    done = workflow.approve(part, actor=Actor(orders))
    assert done.state == "approved" and [a["groups"] for a in done.approvals] == [["payments-web"], ["orders"]]
    assert AuditEvent.objects.filter(action="approve-part", change_request=copy).count() == 1


def test_an_approver_of_everything_approves_a_two_team_change_at_once(world, teams, personas, unchanged_broker):
    copy = _change(personas["operator"], "payments-web", {"strategy": "copy", "source_group": "orders"})
    assert workflow.approve(copy, actor=Actor(personas["approver"])).state == "approved"


def test_a_scoped_operator_cannot_request_outside_their_groups(world, teams):
    with pytest.raises(ChangeRefused) as refused:
        _change(teams["pay-operator"], "orders")
    assert refused.value.status == 404  # as for a group that is not there
    with pytest.raises(ChangeRefused) as refused:
        _change(teams["pay-viewer"], "payments-web")
    assert refused.value.status == 403


def test_only_a_scoped_admin_cancels_someone_elses_request_in_their_scope(world, teams):
    request = _change(teams["pay-operator"], "payments-web")
    with pytest.raises(ChangeRefused):
        workflow.cancel(request, actor=Actor(teams["pay-approver"]), reason="stale")
    assert workflow.cancel(request, actor=Actor(teams["pay-admin"]), reason="stale").state == "cancelled"
