"""Grants in headless Chromium with DEBUG off: a payments approver sees the payments groups and
nothing of the orders team's, and approves the payments part of a copy that reads an orders
group, which then waits for an orders approver."""

from __future__ import annotations

import dataclasses

import pytest
from django.contrib.auth import get_user_model

from consumers.changes import kinds, workflow
from consumers.changes.workflow import Actor
from consumers.identity import Grant
from consumers.models import Cluster
from tests.conftest import PASSWORD
from tests.support.published import group, publish
from tests.test_browser import log_in, submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_team_approver_sees_only_its_groups_and_approves_its_part(page, live_server, redis, personas, monkeypatch):
    # the cluster is a closed port: the copy's effect is taken as unchanged since the plan
    monkeypatch.setitem(
        kinds._KINDS, "reset", dataclasses.replace(kinds._KINDS["reset"], effect_changed=lambda r: None)
    )
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    publish(east, redis, [group("orders", lag=40), group("payments-web", lag=5)])
    get_user_model().objects.create_user("pay-approver", password=PASSWORD)
    Grant.objects.create(subject_kind="user", subject="pay-approver", role="approver", clusters="east",
                         groups="payments-*")  # fmt: skip
    plan = {"rows": [], "totals": {}, "warnings": [], "online": False}
    params = {"strategy": "copy", "source_group": "orders"}
    copy = workflow.submit(actor=Actor(personas["operator"]), cluster=east, group="payments-web", kind="reset",
                           params=params, plan=plan, reason="replay")  # fmt: skip

    log_in(page, live_server.url, "pay-approver")
    rows = page.locator("tr[data-group]")
    assert rows.count() == 1 and "payments-web" in rows.first.inner_text()
    assert "orders" not in page.content()
    assert page.goto(live_server.url + "/groups/east/orders/").status == 404

    page.goto(live_server.url + f"/changes/{copy.pk}/")
    submit(page, "#approve")
    assert "Waiting for an approver of orders" in page.locator("#approvals").inner_text()
    copy.refresh_from_db()
    assert copy.state == "pending" and copy.approvals[0]["groups"] == ["payments-web"]
    assert page.evaluate("window.__csp || []") == []
