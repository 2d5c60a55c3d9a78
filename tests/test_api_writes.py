"""Writes under /api/: JSON only, never cross-site, CSRF with a session, and every body checked
against its endpoint's schema before anything reaches the database, the audit log or a broker.

The fuzz test builds bodies that are wrong for the endpoint (the whole body not an object, one
field of the wrong type, size or range, an unknown field) and asserts a JSON 4xx naming the
field, with no change anywhere and no connection attempted to the cluster."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from consumers.audit.models import AuditEvent
from consumers.changes import workflow
from consumers.changes.api import CREATE, DECISION
from consumers.changes.models import ChangeRequest
from consumers.changes.workflow import Actor
from consumers.dlq.api import REDRIVE
from consumers.dlq.models import RedriveJob
from consumers.identity import create_token
from consumers.models import Cluster
from consumers.resets.kind import API_PARAMS as RESET_PARAMS
from consumers.web import apischema
from consumers.web.apischema import Bool, Choice, Int, List, Map, Moment, Obj, Str
from consumers.web.inputs import EARLIEST_MS

PLAN = {"rows": [], "totals": {}, "warnings": [], "online": False}
# fixed once: a strategy whose bounds moved with the clock would draw differently on replay
FAR_FUTURE_MS = int(time.time() * 1000) + 30 * 86_400_000
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def not_(kinds: tuple[type, ...]):
    """JSON values of none of these Python types (bool is not an int here)."""
    return ANY_JSON.filter(
        lambda v: not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds and int in kinds)
    )


def invalid(schema):
    """Values that `schema` must refuse."""
    if isinstance(schema, Str):
        too_long = st.text(min_size=schema.max_length + 1, max_size=schema.max_length + 3)
        not_unicode = st.sampled_from(["\ud800", "a\udfff", "ok\x00"])  # lone surrogates, NUL
        return not_((str,)) | too_long | not_unicode
    if isinstance(schema, Int):
        out_of_range = st.integers(max_value=schema.min - 1) | st.integers(min_value=schema.max + 1)
        return not_((int,) if not schema.nullable else (int, type(None))) | out_of_range
    if isinstance(schema, Moment):  # before 2000 or well after now
        return not_((int,) if not schema.nullable else (int, type(None))) | st.integers(max_value=EARLIEST_MS - 1) \
            | st.integers(min_value=FAR_FUTURE_MS)  # fmt: skip
    if isinstance(schema, Bool):
        return not_((bool,))
    if isinstance(schema, Choice):
        return not_((str,)) | st.text(max_size=12).filter(lambda v: v not in schema.choices)
    if isinstance(schema, List):
        return not_((list,)) | invalid(schema.item).map(lambda v: [v])
    if isinstance(schema, Map):
        return not_((dict,)) | invalid(schema.value).map(lambda v: {"t@broker-a#0": v})
    assert isinstance(schema, Obj)
    return wrong_body(schema, {}, "body").map(lambda pair: pair[0])


def wrong_body(schema: Obj, base: dict, path: str):
    """(body, field): a body valid but for one thing, and the field the answer must name. The
    rest is `base`, a valid body (its required fields present), so the one wrong field is
    reached: the schema checks unknown and required fields before the types."""
    unknown = (
        st.text(min_size=1, max_size=8)
        .filter(lambda k: k not in schema.fields)
        .map(lambda k: ({**base, k: 1}, f"{path}.{k}"))
    )
    shapes = [not_((dict,)).map(lambda v: (v, path)), unknown]
    if schema.fields:
        shapes.append(st.sampled_from(sorted(schema.fields)).flatmap(lambda name: _bad_field(schema, base, path, name)))
    return st.one_of(*shapes)


def _bad_field(schema: Obj, base: dict, path: str, name: str):
    field, where = schema.fields[name], f"{path}.{name}"
    if isinstance(field, Obj):
        inner = VALID_NESTED.get(where, {})
        return wrong_body(field, inner, where).map(lambda pair: ({**base, name: pair[0]}, pair[1]))
    return invalid(field).map(lambda v: ({**base, name: v}, where))


# valid nested objects, for a wrong field inside them
VALID_NESTED = {"body.params": {"strategy": "earliest"}, "body.selection": {}}


@pytest.fixture
def world(personas, db, monkeypatch):
    connections = []

    def no_broker(cluster):
        connections.append(cluster.name)
        raise AssertionError("a refused write reached for the broker")

    monkeypatch.setattr("consumers.clusters.connect.open_client", no_broker)
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    change = workflow.submit(actor=Actor(personas["operator"], "10.0.0.1"), cluster=cluster, group="orders",
                             kind="reset", params={"strategy": "earliest"}, plan=PLAN, reason="replay")  # fmt: skip
    job = RedriveJob.objects.create(cluster=cluster, group="orders", target="group", rate=10, state="paused",
                                    total=5, created_by=personas["operator"])  # fmt: skip
    _, secret = create_token(personas["admin"], name="fuzz", days=1)
    return {
        "change": change,
        "job": job,
        "auth": {"HTTP_AUTHORIZATION": f"Bearer {secret}"},
        "connections": connections,
    }


def _state():
    return (
        list(ChangeRequest.objects.values_list("pk", "state", "decided_by")),
        list(RedriveJob.objects.values_list("pk", "state")),
        # a refused write leaves its own trace (write-refused), and nothing else
        AuditEvent.objects.exclude(action="write-refused").count(),
    )


ENDPOINTS = {
    # the envelope, with the params of the one kind scripts request (a reset); then a valid body
    "create": (
        "/api/changes/",
        Obj({**CREATE.fields, "params": RESET_PARAMS}, required=CREATE.required),
        {"cluster": "east", "group": "orders", "params": {"strategy": "earliest"}, "reason": "replay"},
    ),
    "approve": ("/api/changes/{change}/approve/", DECISION, {}),
    "reject": ("/api/changes/{change}/reject/", DECISION, {"reason": "no"}),
    "cancel": ("/api/changes/{change}/cancel/", DECISION, {}),
    "redrive": ("/api/dlq/east/orders/redrive/", REDRIVE, {"target": "group", "rate": 10}),
    "job-cancel": ("/api/dlq/jobs/{job}/cancel/", Obj({}), {}),
}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_bodies_of_the_wrong_shape_are_a_json_400_and_change_nothing(client, world, endpoint):
    path, schema, valid = ENDPOINTS[endpoint]
    url = path.format(change=world["change"].pk, job=world["job"].pk)
    before = _state()

    @hypothesis_settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(case=wrong_body(schema, valid, "body"))
    def check(case):
        body, field = case
        response = client.post(url, json.dumps(body), content_type="application/json", **world["auth"])
        assert response.status_code == 400 and response["Content-Type"] == "application/json", response.content
        answer = response.json()
        # the one wrong field is named (a list item or map value inside it adds its own suffix)
        assert answer["status"] == 400 and answer["error"], answer
        assert answer["field"] == field or answer["field"].startswith((f"{field}[", f"{field}.")), (answer, field)
        assert _state() == before and not world["connections"]

    check()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"{", "valid JSON"),
        (b"\xff\xfe", "valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "valid JSON"),  # nesting past the recursion limit
        (b'{"reason": "' + b"x" * 1_000_001 + b'"}', "bytes"),
        (b'{"reason": "a\\u0000b"}', "NUL"),
    ],
)
def test_broken_and_oversized_bodies_are_refused(client, world, raw, says):
    url = f"/api/changes/{world['change'].pk}/reject/"
    before = _state()
    response = client.post(url, raw, content_type="application/json", **world["auth"])
    assert response.status_code == 400 and says in response.json()["error"] and _state() == before


def test_the_schema_errors_name_the_field():
    with pytest.raises(apischema.SchemaError) as refused:
        RESET_PARAMS.clean({"strategy": "exact", "offsets": {"a": True}}, "body.params")
    assert refused.value.field == 'body.params.offsets["a"]' and "whole number" in refused.value.message
    with pytest.raises(apischema.SchemaError, match="body.params.timestamp_ms: must be a whole number, not a boolean"):
        RESET_PARAMS.clean({"strategy": "time", "timestamp_ms": True}, "body.params")
    with pytest.raises(apischema.SchemaError, match="body.params: must be an object, not a list"):
        apischema.parse(b'{"cluster": "e", "group": "g", "params": [1]}', CREATE)
    with pytest.raises(apischema.SchemaError, match="body.rate: must be a whole number, not a boolean"):
        apischema.parse(b'{"target": "group", "rate": true}', REDRIVE)
    with pytest.raises(apischema.SchemaError, match="body.selection.since_ms: must be a whole number, not a string"):
        apischema.parse(b'{"target": "group", "selection": {"since_ms": "x"}}', REDRIVE)
    with pytest.raises(apischema.SchemaError, match="body: must be a JSON object, not a list"):
        apischema.parse(b"[1, 2]", DECISION)
    assert apischema.parse(b"", DECISION) == {} and apischema.parse(b'{"reason": " ok "}', DECISION) == {"reason": "ok"}


# cross-site and content type


def test_a_write_must_be_json(client, world):
    before = _state()
    url = f"/api/changes/{world['change'].pk}/approve/"
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        response = client.post(url, "{}", content_type=content_type, **world["auth"])
        assert response.status_code == 415 and "application/json" in response.json()["error"]
    assert _state() == before


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_ORIGIN": "http://evil.example"},
        {"HTTP_ORIGIN": "null"},
        {"HTTP_SEC_FETCH_SITE": "cross-site"},
        {"HTTP_SEC_FETCH_SITE": "same-site", "HTTP_ORIGIN": "http://other.testserver"},
    ],
)
def test_cross_site_writes_are_refused_with_a_token_too(client, world, headers):
    before = _state()
    url = f"/api/changes/{world['change'].pk}/approve/"
    response = client.post(url, "{}", content_type="application/json", **world["auth"], **headers)
    assert response.status_code == 403 and "cross-site" in response.json()["error"]
    assert _state() == before


def test_a_same_origin_token_write_goes_through(client, world):
    response = client.post(f"/api/changes/{world['change'].pk}/reject/", {"reason": "not now"},
                           content_type="application/json", HTTP_ORIGIN="http://testserver",
                           HTTP_SEC_FETCH_SITE="same-origin", **world["auth"])  # fmt: skip
    assert response.status_code == 200 and response.json()["state"] == "rejected"


def test_a_session_write_needs_the_csrf_token(personas, world):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(personas["approver"])
    before = _state()
    url = f"/api/changes/{world['change'].pk}/approve/"
    response = browser.post(url, "{}", content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["error"] and _state() == before
    browser.get("/changes/")  # sets the CSRF cookie, as the console's pages do
    token = browser.cookies["csrftoken"].value
    rejected = browser.post(f"/api/changes/{world['change'].pk}/reject/", {"reason": "no"},
                            content_type="application/json", HTTP_X_CSRFTOKEN=token)  # fmt: skip
    assert rejected.status_code == 200 and rejected.json()["state"] == "rejected"
