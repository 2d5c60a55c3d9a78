"""Tokens with a role and scope of their own: never wider than the owner's, shown in the list,
applied on every API call together with the owner's grants (losing a grant narrows the token)."""

from __future__ import annotations

import json
import re

from django.contrib.auth import get_user_model

from consumers.identity import ApiToken, Grant
from consumers.models import Cluster
from tests.support.published import group, publish


def _create(client, **fields) -> tuple[int, str]:
    page = client.post("/account/tokens/new/", {"name": "script", "days": "30", **fields})
    found = re.search(r'id="new-token">.*?<code>(rmqc_[^<]+)</code>', page.content.decode())
    return page.status_code, found.group(1) if found else ""


def _groups(client, secret: str) -> list[str]:
    response = client.get("/api/groups/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200, response.content
    return sorted(g["group"] for g in response.json()["groups"])


def test_a_read_only_token_for_a_few_groups(client, personas, redis, db):
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    publish(east, redis, [group("orders"), group("payments-web"), group("payments-api")])
    client.force_login(personas["operator"])
    status, secret = _create(client, role="viewer", clusters="east", groups="payments-*", topics="")
    assert status == 200 and secret
    assert "viewer on east / payments-*" in client.get("/account/tokens/").content.decode()
    client.logout()
    assert _groups(client, secret) == ["payments-api", "payments-web"]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert client.get("/api/groups/east/orders/", **headers).status_code == 404
    body = {"cluster": "east", "group": "payments-web", "params": {"strategy": "earliest"}, "reason": "replay"}
    refused = client.post("/api/changes/", json.dumps(body), content_type="application/json", **headers)
    assert refused.status_code == 403 and "operator role" in refused.json()["error"]  # the token is a viewer's


def test_a_token_wider_than_its_owner_is_refused_and_narrows_with_the_owner(client, redis, db):
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    publish(east, redis, [group("orders"), group("payments-web")])
    owner = get_user_model().objects.create_user("pay")
    grant = Grant.objects.create(
        subject_kind="user", subject="pay", role="viewer", clusters="east", groups="payments-*"
    )
    client.force_login(owner)
    for wider in ({"role": "operator", "groups": "payments-*"}, {"role": "viewer", "groups": "*"},
                  {"role": "viewer", "clusters": "*", "groups": "payments-*"}):  # fmt: skip
        status, secret = _create(client, **{"clusters": "east", **wider})
        assert status == 403 and not secret, wider
    assert not ApiToken.objects.exists()
    status, secret = _create(client, role="viewer", clusters="east", groups="payments-web", topics="")
    assert status == 200
    status, mine = _create(client)  # no role: all of the owner's
    client.logout()
    assert _groups(client, secret) == ["payments-web"] and _groups(client, mine) == ["payments-web"]
    grant.delete()
    for token in (secret, mine):
        assert client.get("/api/groups/", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 403
