"""/api/: the same data as JSON, for scripts with an API token or a session."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from django.contrib.auth import get_user_model

from consumers.identity import create_token
from consumers.models import Cluster
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
    _, secret = create_token(get_user_model().objects.get(username=username), name="test", days=1)
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


def test_the_groups_list_is_walked_with_a_cursor_that_rows_coming_and_going_do_not_shift(client, east, personas, redis):
    seconds = dict(zip([f"g{i:02}" for i in range(9)], [5, 9, 5, 1, 9, 3, 5, 2, 7], strict=True))
    groups = [group(name, lag=10) for name in seconds] + [group("nolag", lag=10)]
    publish(east, redis, groups, lag_seconds={**seconds, "nolag": None})
    headers, query = bearer("viewer"), "/api/groups/?sort=lag_seconds&dir=desc"
    whole = client.get(f"{query}&limit=1000", **headers).json()
    order = [g["group"] for g in whole["groups"]]
    # by hand: lag seconds descending, ties by name descending (the order's tie-break), unknown last
    assert order == ["g04", "g01", "g08", "g06", "g02", "g00", "g05", "g07", "g03", "nolag"]
    assert whole["next_cursor"] is None
    seen, url, calls = [], f"{query}&limit=3", 0
    while url:
        data = client.get(url, **headers).json()
        seen += [g["group"] for g in data["groups"]]
        calls += 1
        if calls == 2:  # between two calls a row before the cursor goes and a new one comes after it
            kept = [g for g in groups if g.group != "g04"] + [group("g99", lag=10)]
            publish(east, redis, kept, lag_seconds={**seconds, "nolag": None, "g99": 0.5})
        url = f"{query}&limit=3&cursor={data['next_cursor']}" if data["next_cursor"] else None
    assert seen == [*order[:6], "g05", "g07", "g03", "g99", "nolag"] and len(set(seen)) == len(seen)
    for bad, says in [("cursor=xyz", "not a cursor"), ("cursor=e30", "not a cursor"),
                      (f"sort=group&cursor={data_cursor(client, headers)}", "another sort order"),
                      (f"page=2&cursor={data_cursor(client, headers)}", "page or cursor")]:  # fmt: skip
        answer = client.get(f"/api/groups/?{bad}", **headers)
        assert answer.status_code == 400 and says in answer.json()["error"], (bad, answer.content)
    client.force_login(personas["viewer"])
    assert client.get("/groups/?limit=3").status_code == 400  # the page goes by page


def data_cursor(client, headers) -> str:
    return client.get("/api/groups/?limit=1", **headers).json()["next_cursor"]


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


def test_the_allocation_timeline_is_each_hand_over_from_the_history(db, client, personas, monkeypatch):
    """The same hand-worked polls as tests/live/test_rebalance.py's first test, through the API."""
    import pyarrow as pa

    from consumers.live import selectors
    from tests.live.test_rebalance import T0, rows

    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9")
    polls = [(0, {0: "A", 1: "A"}), (1, {0: "A", 1: "B"}), (2, {0: "A", 1: None}), (3, {0: "A", 1: "A"})]
    stats = pa.table({"ts": [T0 + dt.timedelta(minutes=m) for m, _ in polls], "complete": [True] * len(polls)})

    class History:  # the history store, holding those polls of group g
        def read(self, table, cluster, *, group, since):
            assert (cluster, group) == ("east", "g")
            return rows(*polls) if table == "queue_offsets" else stats

    monkeypatch.setattr(selectors, "history_store", History)
    client.force_login(personas["viewer"])
    body = client.get("/api/groups/east/g/allocation/?hours=2").json()
    assert (body["hours"], body["polls"], body["clients"]) == (2, 4, ["A", "B"])
    assert [(c["queue"], c["from"], c["to"]) for c in body["changes"]] == [
        ("T@broker-a#1", "A", "B"), ("T@broker-a#1", "B", None), ("T@broker-a#1", None, "A")]  # fmt: skip
    assert body["changes"][0]["at"] == (T0 + dt.timedelta(minutes=1)).isoformat()
    assert client.get("/api/groups/east/g/allocation/?hours=0").status_code == 400
    assert client.get("/api/groups/west/g/allocation/").status_code == 404
