"""The message pages and their API: who may see what (a body only for operators and admins,
everywhere), bad input as a clear 4xx before any broker is asked, and the broker's failures as
502 with why. The broker reads are replaced here (they are tested in test_track.py,
tests/rocketmq/test_lookup.py and against the real cluster in test_cluster.py)."""

from __future__ import annotations

import base64
import json

import pytest

from consumers.messages import lookup, services
from consumers.messages.track import Tracking
from consumers.messages.verdicts import Copy, GroupTrack
from consumers.models import Cluster
from consumers.rocketmq import ConnectError
from consumers.rocketmq.message import decode_messages
from consumers.rocketmq.ops.messages import Located
from tests.support.wire import encode_stored_message

SECRET = b'{"card": "4111-1111-1111-1111"}'
UNIQ = "7F0000010C9C18B4AAC27D3A6E4F0001"
MESSAGE_URL = "/messages/east/orders/broker-a/0/5/"


def located() -> Located:
    raw = encode_stored_message(topic="orders", body=SECRET, queue_offset=5, physical_offset=4096,
                                properties={"UNIQ_KEY": UNIQ, "TAGS": "paid", "KEYS": "order-7"})  # fmt: skip
    return Located("broker-a", decode_messages(raw)[0])


@pytest.fixture
def east(db, redis, monkeypatch):
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    asked = []

    def find(cluster, search, scope=None):
        asked.append(search)
        if search.topic == "missing":
            raise services.NoSuchTopic("the cluster east has no topic missing")
        if search.topic == "down":
            raise ConnectError("no name server answered (127.0.0.1:1)")
        if search.by == "time":
            return services.Result(page=lookup.TimePage([located()], 40, {"broker-a#0": 6}, True))
        return services.Result(lookup.Found("key order-7 in orders", [located()]))

    def message(cluster, topic, broker, queue_id, offset, scope=None):
        if offset != 5:
            raise services.MessageNotFound(f"no message at offset {offset}")
        return located()

    dead = Copy("dlq", "%DLQ%billing", "broker-a", 0, 3, 1_700_000_009_000, 3)
    dead.redrives = [{"job": 1, "sent_at": "2026-01-01T00:00:00+00:00", "target_topic": "orders"}]
    tracking = Tracking([
        GroupTrack("billing", "dlq", "dead-lettered: %DLQ%billing offset 3", 6, copies=[dead]),
        GroupTrack("audit", "not_yet", "its committed offset 2: 3 message(s) ahead", 2, ahead=3),
    ], [], 1_700_000_100.0)  # fmt: skip
    monkeypatch.setattr("consumers.messages.services.find", find)
    monkeypatch.setattr("consumers.messages.services.message", message)
    monkeypatch.setattr("consumers.messages.services.track_message", lambda cluster, found, scope=None: tracking)
    return asked


PAGES = ["/messages/", "/messages/?cluster=east&by=key&topic=orders&key=order-7", MESSAGE_URL,
         MESSAGE_URL + "track/"]  # fmt: skip
API = ["/api/messages/?cluster=east&by=key&topic=orders&key=order-7", "/api/messages/east/orders/broker-a/0/5/",
       "/api/messages/east/orders/broker-a/0/5/track/"]  # fmt: skip


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "admin"])
def test_every_role_reads_the_pages_and_the_api(client, personas, east, role):
    client.force_login(personas[role])
    for url in PAGES + API:
        assert client.get(url).status_code == 200, url


def test_no_role_no_pages_and_anonymous_to_the_login(client, personas, east):
    for url in PAGES:
        assert client.get(url).status_code == 302
    client.force_login(personas["nobody"])
    for url in PAGES + API:
        assert client.get(url).status_code == 403, url


@pytest.mark.parametrize(("role", "shown"), [("viewer", False), ("approver", False), ("operator", True),
                                               ("admin", True)])  # fmt: skip
def test_the_body_is_for_operators_only_on_the_page_and_in_the_api(client, personas, east, role, shown):
    client.force_login(personas[role])
    page = client.get(MESSAGE_URL).content.decode()
    assert ("4111-1111" in page) == shown
    assert ('id="body-hidden"' in page) == (not shown)
    assert UNIQ in page and "order-7" in page and "paid" in page  # metadata for everyone
    data = client.get("/api/messages/east/orders/broker-a/0/5/").json()
    assert (data["body_base64"] == base64.b64encode(SECRET).decode()) if shown else data["body_base64"] is None
    assert data["properties"]["UNIQ_KEY"] == UNIQ and data["body_size"] == len(SECRET)
    for url in (PAGES[1], PAGES[3], API[0], API[2]):  # lists and tracks carry no body for anyone
        assert b"4111" not in client.get(url).content


def test_the_find_page_lists_what_was_found_and_pages_a_time_range(viewer_client, east):
    html = viewer_client.get("/messages/?cluster=east&by=key&topic=orders&key=order-7").content.decode()
    assert 'data-msg-id="' + UNIQ in html and 'href="' + MESSAGE_URL in html
    html = viewer_client.get(
        "/messages/?cluster=east&by=time&topic=orders&since=2026-01-01T00:00&until=2026-01-02T00:00"
    ).content.decode()
    assert 'id="next-page"' in html and ">40<" in html
    assert east[-1].since_ms == 1_767_225_600_000 and east[-1].until_ms == 1_767_312_000_000
    data = viewer_client.get(
        "/api/messages/?cluster=east&by=time&topic=orders&since=2026-01-01T00:00&until=2026-01-02T00:00"
    ).json()
    assert data["total_in_range"] == 40 and data["next_cursor"]
    assert len(data["messages"]) == 1 and "body_base64" not in data["messages"][0]
    cursor = data["next_cursor"]
    viewer_client.get(f"/api/messages/?cluster=east&by=time&topic=orders&since=2026-01-01T00:00"
                      f"&until=2026-01-02T00:00&cursor={cursor}")  # fmt: skip
    assert east[-1].cursor == {"broker-a#0": 6}


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("cluster=east&by=id", "needs msg_id"),
        ("cluster=east&by=id&msg_id=not-hex", "hexadecimal"),
        ("cluster=east&by=key&key=order-7", "needs topic"),
        ("cluster=east&by=key&topic=bad topic&key=k", "a topic name"),
        ("cluster=east&by=offset&topic=orders&broker=broker-a&queue_id=%C2%B2&offset=1", "digits 0-9"),
        ("cluster=east&by=offset&topic=orders&broker=broker-a&queue_id=0&offset=99999999999999999999", "between"),
        ("cluster=east&by=time&topic=orders&since=2026-01-02T00:00&until=2026-01-01T00:00", "before"),
        ("cluster=east&by=time&topic=orders&since=1990-01-01T00:00&until=2026-01-01T00:00", "after 2000"),
        ("cluster=west&by=id&msg_id=" + UNIQ, "valid choice"),
        ("cluster=east&by=time&topic=orders&since=2026-01-01T00:00&until=2026-01-02T00:00&cursor=xx", "cursor"),
        ("cluster=east&by=key&topic=orders&key=a%00b", "Null characters"),
    ],
)
def test_bad_input_is_a_400_that_says_why_before_any_broker_is_asked(viewer_client, east, query, says):
    page = viewer_client.get(f"/messages/?{query}")
    assert page.status_code == 400 and says in page.content.decode()
    api = viewer_client.get(f"/api/messages/?{query}")
    assert api.status_code == 400 and says in api.json()["error"]
    assert east == []


def test_a_malformed_id_is_only_said_to_be_malformed_not_also_missing(viewer_client, east):
    error = viewer_client.get("/api/messages/?cluster=east&by=id&msg_id=not-hex").json()["error"]
    assert "hexadecimal" in error and "needs msg_id" not in error


def test_the_api_refuses_parameters_it_does_not_know(viewer_client, east):
    response = viewer_client.get(f"/api/messages/?cluster=east&by=id&msg_id={UNIQ}&msgid=x")
    assert response.status_code == 400 and "unknown parameter(s) msgid" in response.json()["error"]
    assert viewer_client.get(f"/messages/?cluster=east&by=id&msg_id={UNIQ}&msgid=x").status_code == 200


def test_missing_topics_messages_and_positions_are_404_and_a_dead_cluster_502(viewer_client, east):
    assert viewer_client.get("/messages/?cluster=east&by=key&topic=missing&key=k").status_code == 404
    assert viewer_client.get("/api/messages/?cluster=east&by=key&topic=missing&key=k").status_code == 404
    down = viewer_client.get("/messages/?cluster=east&by=key&topic=down&key=k")
    assert down.status_code == 502 and "no name server answered" in down.content.decode()
    assert viewer_client.get("/api/messages/?cluster=east&by=key&topic=down&key=k").status_code == 502
    for url in ("/messages/east/orders/broker-a/0/6/", "/messages/east/orders/broker-a/70000/5/",
                "/messages/east/bad%20topic/broker-a/0/5/", "/messages/west/orders/broker-a/0/5/",
                "/messages/east/orders/broker-a/0/99999999999999999999/"):  # fmt: skip
        assert viewer_client.get(url).status_code == 404, url
    missing = viewer_client.get("/api/messages/east/orders/broker-a/0/6/track/")
    assert missing.status_code == 404 and "offset 6" in missing.json()["error"]


def test_the_track_shows_each_verdict_with_its_evidence_and_the_redrives_of_a_dead_letter(viewer_client, east):
    fragment = viewer_client.get(MESSAGE_URL + "track/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment
    assert 'data-group="billing" data-verdict="dlq"' in fragment and "in the DLQ" in fragment
    assert 'href="/messages/east/%25DLQ%25billing/broker-a/0/3/"' in fragment  # the dead copy, its own page
    assert 'href="/dlq/jobs/1/"' in fragment
    assert 'data-group="audit" data-verdict="not_yet"' in fragment and "3 message(s) ahead" in fragment
    assert "<html" in viewer_client.get(MESSAGE_URL + "track/").content.decode()
    data = viewer_client.get("/api/messages/east/orders/broker-a/0/5/track/").json()
    billing = data["groups"][0]
    assert (billing["verdict"], billing["label"], billing["copies"][0]["redrives"][0]["job"]) == (
        "dlq",
        "in the DLQ",
        1,
    )
    assert json.dumps(data).count("4111") == 0


def test_the_message_page_loads_the_track_after_it(viewer_client, east):
    html = viewer_client.get(MESSAGE_URL).content.decode()
    assert f'hx-get="{MESSAGE_URL}track/"' in html and 'hx-trigger="load"' in html
