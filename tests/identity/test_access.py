"""The access table (consumers.identity.ACCESS, in roles.py) walked over every URL of the console, for every role,
anonymous and a user with no role: what the table allows is never refused, what it does not
allow is refused (403; anonymous: the login page or a 401), and nothing answers 500.

The cluster points at a closed port, so pages that read a broker answer 502 for allowed roles;
refusals must come before any broker read, which is what this checks for denied roles."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import get_resolver, reverse
from django.utils import timezone

from consumers.alerts.models import Alert, AlertRule, Silence
from consumers.changes import workflow
from consumers.changes.workflow import Actor
from consumers.dlq.forms import DlqFilterForm
from consumers.dlq.models import RedriveJob
from consumers.identity import ACCESS, create_token, roles_with
from consumers.models import Cluster
from consumers.reports.models import Report
from consumers.stats.models import StatsRun

ROLES = ("viewer", "operator", "approver", "admin")
PLAN = {"rows": [], "totals": {}, "warnings": [], "online": False}

# what each POST sends (form data for pages, a JSON body under /api/)
POST_DATA = {
    "reset-create": {"strategy": "earliest", "reason": "replay"},
    "skip-create": {"count": "1", "copy_to_dlq": "on", "reason": "poison"},
    "config-create": {"retryMaxTimes": "3", "reason": "fewer retries"},
    "capture-stacks": {},
    "capture-client-stacks": {},
    "change-action": {"action": "approve"},
    "dlq-redrive": {"target": "group", "rate": "10"},
    "dlq-make-readable": {},
    "dlq-job-action": {},
    "stats-run": {"first": "2026-01-01", "last": "2026-01-01"},
    "report-create": {
        "clusters": ["east"],
        "first": "2026-01-01",
        "last": "2026-01-02",
        "granularity": "daily",
        "formats": ["csv"],
    },  # fmt: skip
    "token-create": {"name": "script", "days": "1"},
    "alert-acknowledge": {},
    "silence-create": {"subject_pattern": "orders", "minutes": "30", "reason": "deploy"},
    "silence-end": {},
    "token-revoke": {},
    "api-changes": {"cluster": "east", "group": "orders", "params": {"strategy": "earliest"}, "reason": "replay"},
    "api-change-action": {},
    "api-reset-preview": {"strategy": "earliest"},
    "group-delete-create": {"reason": "unused"},
    "message-verify-create": {"group": "orders", "client_id": "10.0.0.9@c1", "reason": "check the fix"},
    "mode-create": {"mode-topic": "orders", "mode-mode": "POP", "mode-share": "8", "mode-reason": "pop"},
    "api-dlq-redrive": {"target": "group", "rate": 10},
    "api-dlq-job-action": {},
}


@pytest.fixture
def world(personas, redis, settings, tmp_path, monkeypatch):
    """One of everything a URL can name; tasks are only queued (no worker here)."""
    monkeypatch.setattr("consumers.reports.views.build_report.delay", lambda *a: None)
    monkeypatch.setattr("consumers.stats.views.run_statistics.delay", lambda *a: None)
    settings.REPORT_DIR = tmp_path / "reports"
    settings.STATS_RUN_DIR = tmp_path / "stats-runs"
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    change = workflow.submit(actor=Actor(personas["operator"], "10.0.0.1"), cluster=cluster, group="orders",
                             kind="reset", params={"strategy": "earliest"}, plan=PLAN, reason="replay")  # fmt: skip
    job = RedriveJob.objects.create(cluster=cluster, group="orders", target="group", rate=10, state="paused",
                                    total=5, created_by=personas["operator"])  # fmt: skip
    report = Report.objects.create(title="weekly", clusters=["east"], first=dt.date(2026, 1, 1),
                                   last=dt.date(2026, 1, 7), formats=["csv"], state="ready",
                                   expires_at=timezone.now() + dt.timedelta(days=1))  # fmt: skip
    run = StatsRun.objects.create(first=dt.date(2026, 1, 1), last=dt.date(2026, 1, 1), clusters=["east"],
                                  trigger="page", state="succeeded", master="local[*]")  # fmt: skip
    token, _ = create_token(personas["viewer"], name="theirs", days=None)
    rule = AlertRule.objects.create(name="stopped", condition="state", states=["STOPPED"])
    alert = Alert.objects.create(rule=rule, cluster=cluster, scope="group", subject="orders", state="firing",
                                 evidence="STOPPED: no client", started_at=timezone.now())  # fmt: skip
    silence = Silence.objects.create(starts_at=timezone.now(), ends_at=timezone.now() + dt.timedelta(hours=1),
                                     reason="deploy", created_by=personas["admin"])  # fmt: skip
    return {
        "cluster": "east", "group": "orders", "topic": "orders", "broker": "broker-a", "queue_id": 0, "offset": 0,
        "client_id": "10.0.0.9@4242#1",
        "pk": {"change": change.pk, "dlq-job": job.pk, "report": report.pk, "stats": run.pk, "token": token.pk,
               "alert": alert.pk, "silence": silence.pk},
    }  # fmt: skip


def _kwargs(name: str, pattern, world) -> dict:
    kwargs = {}
    for arg in pattern.pattern.converters:
        if arg == "pk":
            kind = "change" if "change" in name else "dlq-job" if "dlq" in name else name.split("-")[0]
            kwargs["pk"] = world["pk"][kind]
        elif arg == "fmt":
            kwargs["fmt"] = "csv"
        elif arg == "action":
            kwargs["action"] = "approve" if "change" in name else "cancel"
        else:
            kwargs[arg] = world[arg]
    return kwargs


def _urls(world) -> list[tuple[str, str, str]]:
    """(name, method, url) for every method the table offers on every URL of the console."""
    patterns = {p.name: p for p in get_resolver("consumers.urls").url_patterns}
    found = []
    for name, rule in ACCESS.items():
        url = reverse(f"consumers:{name}", kwargs=_kwargs(name, patterns[name], world))
        found += [(name, method, url) for method, needed in (("GET", rule.get), ("POST", rule.post)) if needed]
    return found


def test_the_table_names_every_url_and_only_urls():
    names = {p.name for p in get_resolver("consumers.urls").url_patterns}
    assert names == set(ACCESS), f"missing from ACCESS: {names - set(ACCESS)}; unknown: {set(ACCESS) - names}"


def _send(client, method: str, name: str, url: str):
    if method == "GET":
        return client.get(url)
    data = POST_DATA[name]
    if name.startswith("api-"):
        return client.post(url, json.dumps(data), content_type="application/json")
    return client.post(url, data)


@pytest.mark.parametrize("who", [*ROLES, "nobody", "anonymous"])
def test_every_url_allows_exactly_the_roles_in_the_table(client, personas, world, who):
    if who != "anonymous":
        client.force_login(personas[who])
    wrong = []
    for name, method, url in _urls(world):
        response = _send(client, method, name, url)
        rule = getattr(ACCESS[name], method.lower())
        status = response.status_code
        if who == "anonymous":
            expected_ok = (
                status == 401
                if url.startswith(("/api/", "/metrics"))
                else status == 302 and "/login/" in response["Location"]
            )
        elif who in roles_with(rule):
            expected_ok = status not in (401, 403, 405) and status < 500 or status == 502
        else:
            expected_ok = status == 403
        if not expected_ok:
            wrong.append(f"{method} {url} as {who}: {status}")
    assert not wrong, "\n".join(wrong)


def test_a_viewer_cannot_filter_dead_letters_by_body(client, personas, world):
    """The body oracle: growing a guess one character at a time under ?body= told a viewer the
    body. Refused on the page and the API, before any broker read, and the field is not shown."""
    client.force_login(personas["viewer"])
    for url in (
        "/dlq/east/orders/?body=4111",
        "/dlq/east/orders/?msg_id=X&body=4",
        "/api/dlq/east/orders/messages/?body=a",
    ):
        response = client.get(url)
        assert response.status_code == 403, url
        assert b"operator" in response.content
    client.force_login(personas["operator"])
    assert client.get("/dlq/east/orders/?body=4111").status_code == 502  # allowed: reaches the (closed) broker
    assert "body" in DlqFilterForm(can_read_bodies=True).fields
    assert "body" not in DlqFilterForm(can_read_bodies=False).fields  # (tests/dlq: not on the real page either)


def test_the_security_guide_shows_the_table_as_it_is():
    from django.conf import settings

    from consumers.identity import access_markdown

    assert access_markdown() in (settings.BASE_DIR / "docs" / "security.md").read_text()


def test_a_body_search_typed_by_an_operator_is_hidden_from_viewers_everywhere(client, personas, world):
    """A redrive or export selected by body text carries that text: part of a body. Viewers see
    jobs, requests and the audit log, but never the text; operators see it as typed."""
    from consumers import audit

    secret = "card=4111-1111"
    selection = {"body": secret, "tag": "pay"}
    cluster = Cluster.objects.get(name="east")
    job = RedriveJob.objects.create(cluster=cluster, group="orders", target="group", rate=10, state="paused",
                                    total=1, created_by=personas["operator"], selection=selection)  # fmt: skip
    change = workflow.submit(actor=Actor(personas["operator"], "10.0.0.1"), cluster=cluster, group="orders",
                             kind="redrive", params={"job": job.pk, "selection": selection}, plan={"rows": []},
                             reason="redrive the payments")  # fmt: skip
    audit.record("dlq-export", username="operator", cluster="east", group="orders",
                 details={"format": "csv", "selection": selection})  # fmt: skip
    urls = [f"/dlq/jobs/{job.pk}/", f"/api/dlq/jobs/{job.pk}/", f"/api/changes/{change.pk}/", "/api/changes/",
            "/audit/", "/audit/?format=csv", f"/changes/{change.pk}/"]  # fmt: skip
    for role, shown in (("viewer", False), ("operator", True)):
        client.force_login(personas[role])
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, (role, url, response.status_code)
            body = b"".join(response.streaming_content) if response.streaming else response.content
            if url == f"/changes/{change.pk}/":
                assert secret.encode() not in body, url  # not listed there at all
            else:
                assert (secret.encode() in body) is shown, (role, url)
                assert (b"hidden: body searches are for operators only" in body) is not shown, (role, url)
