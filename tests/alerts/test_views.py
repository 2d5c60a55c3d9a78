"""The Alerts page and API: what each role sees and may do, bad input refused with a 4xx."""

from __future__ import annotations

import pytest

from consumers.alerts.models import Alert, Silence
from consumers.audit.models import AuditEvent
from tests.alerts.conftest import make_channel, make_rule
from tests.support.published import group, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def firing(east, redis, queued):
    make_rule(make_channel())
    publish(east, redis, [group("orders", lag=8, online=False)])
    return Alert.objects.get()


def test_a_viewer_sees_the_evidence_and_the_group_link_but_no_buttons(client, personas, firing):
    client.force_login(personas["viewer"])
    page = client.get("/alerts/").content.decode()
    assert "STOPPED: no client is online and lag is 8" in page
    assert 'href="/groups/east/orders/"' in page
    assert 'id="firing-badge"' in page and "Acknowledge" not in page and 'id="silence-form"' not in page
    assert client.post(f"/alerts/{firing.pk}/acknowledge/").status_code == 403


def test_an_operator_acknowledges_once_and_it_is_audited(client, personas, firing):
    client.force_login(personas["operator"])
    assert "Acknowledge" in client.get("/alerts/").content.decode()
    assert client.post(f"/alerts/{firing.pk}/acknowledge/").status_code == 302
    firing.refresh_from_db()
    assert firing.acknowledged_by == personas["operator"]
    event = AuditEvent.objects.get(action="alert-acknowledged")
    assert (event.cluster, event.group, event.details["rule"]) == ("east", "orders", "stopped")
    client.post(f"/alerts/{firing.pk}/acknowledge/")  # twice: nothing more
    assert AuditEvent.objects.filter(action="alert-acknowledged").count() == 1
    assert "acknowledged by operator" in client.get("/alerts/").content.decode()


@pytest.mark.parametrize(
    "data",
    [
        {"subject_pattern": "*", "minutes": "0", "reason": "x"},
        {"subject_pattern": "*", "minutes": "ten", "reason": "x"},
        {"subject_pattern": "*", "minutes": "10", "reason": ""},
        {"subject_pattern": "*", "minutes": "10", "reason": "x", "cluster": "nowhere"},
        {"subject_pattern": "*", "minutes": "10", "reason": "x", "rule": "99999"},
    ],
)
def test_a_bad_silence_is_refused_and_changes_nothing(client, personas, east, data):
    client.force_login(personas["operator"])
    assert client.post("/alerts/silences/new/", data).status_code == 400
    assert not Silence.objects.exists() and not AuditEvent.objects.filter(action="silence-created").exists()


def test_a_silence_is_made_listed_and_ended(client, personas, east):
    client.force_login(personas["operator"])
    client.post("/alerts/silences/new/", {"cluster": "east", "subject_pattern": "orders-*", "minutes": "45",
                                         "reason": "maintenance window"})  # fmt: skip
    silence = Silence.objects.get()
    assert (silence.cluster, silence.created_by, silence.reason) == (east, personas["operator"], "maintenance window")
    assert round((silence.ends_at - silence.starts_at).total_seconds()) == 45 * 60
    assert f'id="silence-{silence.pk}"' in client.get("/alerts/").content.decode()
    assert client.post(f"/alerts/silences/{silence.pk}/end/").status_code == 302
    silence.refresh_from_db()
    assert silence.ended_by == personas["operator"]
    assert [e.action for e in AuditEvent.objects.order_by("pk")] == ["silence-created", "silence-ended"]


def test_the_api_lists_alerts_by_state(client, personas, firing):
    client.force_login(personas["viewer"])
    [listed] = client.get("/api/alerts/").json()["alerts"]
    assert (listed["id"], listed["subject"], listed["state"], listed["silenced"]) == (
        firing.pk,
        "orders",
        "firing",
        False,
    )
    assert [d["channel"] for d in listed["deliveries"]] == ["hook"]
    assert client.get("/api/alerts/?state=resolved").json() == {"alerts": []}
    bad = client.get("/api/alerts/?state=everything")
    assert bad.status_code == 400 and bad.json()["field"] == "state"


def test_the_group_page_shows_what_fires_for_the_group(client, personas, firing):
    client.force_login(personas["viewer"])
    page = client.get("/groups/east/orders/").content.decode()
    assert 'id="group-alerts"' in page and "STOPPED: no client is online and lag is 8" in page
    Alert.objects.update(state="resolved")
    assert 'id="group-alerts"' not in client.get("/groups/east/orders/").content.decode()


def test_the_admin_keeps_a_channel_s_secrets_out_of_pages_and_the_audit_log(client, personas, db):
    client.force_login(personas["admin"])
    secret_url = "https://hooks.example.com/services/T000/B000/XXXXsecretXXXX"
    form = {"name": "chat", "kind": "slack", "url": secret_url, "recipients": "", "enabled": "on"}
    response = client.post("/admin/consumers/channel/add/", {**form, "secret": "hmac-key"})
    assert response.status_code == 302, response.content.decode()[:2000]
    from consumers.alerts.models import Channel

    channel = Channel.objects.get()
    assert channel.secret == "hmac-key"
    event = AuditEvent.objects.get(action="alert-channel-saved")
    assert event.details["url"] == "https://hooks.example.com/…" and event.details["secret"] == "changed"
    page = client.get(f"/admin/consumers/channel/{channel.pk}/change/").content.decode()
    assert "hmac-key" not in page
    # saved again with the secret left empty: the secret stays
    client.post(f"/admin/consumers/channel/{channel.pk}/change/", {**form, "secret": ""})
    channel.refresh_from_db()
    assert channel.secret == "hmac-key"
    assert AuditEvent.objects.filter(action="alert-channel-saved").last().details["secret"] == "unchanged"
    assert secret_url not in AuditEvent.objects.values_list("details", flat=True).__str__()
