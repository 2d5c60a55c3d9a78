"""/api/: the same data as JSON, for scripts with an API token or a session."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth import get_user_model

from consumers.models import Cluster
from consumers.tokens import services as tokens
from tests.conftest import PASSWORD
from tests.support.published import group, publish


@pytest.fixture
def east(db, redis):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    publish(cluster, redis, [group("orders", lag=40), group("audit", lag=7, online=False)], lag_seconds={"audit": None})
    return cluster


def basic(username: str, password: str = PASSWORD) -> dict:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"HTTP_AUTHORIZATION": f"Basic {token}"}


def bearer(username: str) -> dict:
    _, secret = tokens.create(get_user_model().objects.get(username=username), name="test", days=1)
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


@pytest.mark.parametrize("path", ["/api/clusters/", "/api/groups/", "/api/groups/east/orders/"])
def test_anonymous_calls_get_401_json_and_never_a_basic_challenge(client, east, personas, path):
    """A Basic challenge makes browsers prompt for a password and then replay it on every
    request, cross-site ones included: the API asks for a Bearer token instead."""
    response = client.get(path)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"].startswith("authentication required")
    for refused in (client.get(path, **basic("viewer")), client.get(path, **basic("viewer", "wrong"))):
        assert refused.status_code == 401 and "Basic" not in refused["WWW-Authenticate"]
        assert "Bearer" in refused.json()["error"]


def test_basic_auth_only_behind_its_setting(client, east, personas, settings):
    settings.API_BASIC_AUTH = True
    assert client.get("/api/groups/", **basic("viewer")).status_code == 200
    assert client.get("/api/groups/", **basic("viewer", "wrong")).status_code == 401


def test_token_auth_works_and_a_user_without_a_role_is_refused(client, east, personas):
    assert client.get("/api/groups/", **bearer("viewer")).status_code == 200
    response = client.get("/api/groups/", **bearer("nobody"))
    assert response.status_code == 403 and "no console role" in response.json()["error"]


def test_groups_list_unknowns_as_null_and_filters_like_the_page(client, east, personas):
    data = client.get("/api/groups/?sort=lag&dir=desc", **bearer("operator")).json()
    assert [(g["group"], g["lag"]) for g in data["groups"]] == [("orders", 40), ("audit", 7)]
    audit = data["groups"][1]
    assert audit["lag_seconds"] is None and audit["online"] is False and audit["health"]["state"] == "STOPPED"
    assert client.get("/api/groups/?health=NOPE", **bearer("viewer")).status_code == 400


def test_group_detail_and_clusters(client, east, personas):
    detail = client.get("/api/groups/east/orders/", **bearer("viewer")).json()
    assert len(detail["queues"]) == 4 and sum(q["lag"] for q in detail["queues"]) == 40
    assert detail["age_seconds"] >= 0
    assert client.get("/api/groups/east/none/", **bearer("viewer")).status_code == 404
    clusters = client.get("/api/clusters/", **bearer("viewer")).json()["clusters"]
    assert clusters[0]["name"] == "east" and clusters[0]["state"] == "ok"
    assert "secret" not in str(clusters)


def test_the_api_is_read_only(client, east, personas):
    assert client.post("/api/groups/", **bearer("admin")).status_code == 405


@pytest.mark.parametrize(
    ("method", "path", "status", "says"),
    [
        ("get", "/api/groups/east/none/", 404, "no group 'none'"),
        ("get", "/api/groups/nowhere/orders/", 404, "no cluster named 'nowhere'"),
        ("get", "/api/no-such-thing/", 404, "no such resource: /api/no-such-thing/"),
        ("get", "/api/groups/?order=sideways", 400, "unknown parameter(s) order"),
        ("get", "/api/groups/?dir=sideways", 400, "valid values: desc, asc"),
        ("post", "/api/clusters/", 405, "method POST not allowed"),
        ("delete", "/api/groups/east/orders/", 405, "method DELETE not allowed"),
    ],
)
def test_every_api_error_is_json_with_a_message(client, east, personas, method, path, status, says):
    response = getattr(client, method)(path, **bearer("viewer"))
    assert response.status_code == status and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["status"] == status and says in body["error"], body


def test_an_account_without_a_role_gets_a_json_403(client, east, personas):
    response = client.get("/api/groups/east/orders/", **bearer("nobody"))
    assert response.status_code == 403 and response.json() == {
        "error": "your account has no console role",
        "status": 403,
    }
