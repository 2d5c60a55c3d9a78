"""The audit log: append-only through the app and the admin, a hash chain that finds an edit
made directly in the database, and a CSV download equal to the page."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from consumers import audit
from consumers.audit.models import AuditEvent


@pytest.fixture
def events(db):
    return [
        audit.record(
            "request", username="op", remote_addr="10.0.0.1", cluster="east", group="orders", details={"n": 1}
        ),
        audit.record("approve", username="ap", cluster="east", group="orders", details={"note": "é ✓"}),
        audit.record("run", username="system", cluster="west", group="billing"),
    ]


def test_the_chain_holds_and_finds_a_row_edited_in_the_database(events, capsys):
    assert audit.verify_chain().ok and audit.verify_chain().checked == 3
    call_command("verify_audit")
    assert "intact: 3 events" in capsys.readouterr().out
    with connection.cursor() as cursor:  # behind the application's back
        cursor.execute(f"UPDATE {AuditEvent._meta.db_table} SET username = 'mallory' WHERE id = %s", [events[1].pk])
    check = audit.verify_chain()
    assert not check.ok and check.broken_at.pk == events[1].pk and "does not match its hash" in check.why
    with pytest.raises(CommandError, match=f"broken at event #{events[1].pk}"):
        call_command("verify_audit")


def test_a_deleted_newest_event_is_found(events):
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table} WHERE id = %s", [events[2].pk])
    check = audit.verify_chain()
    assert not check.ok and "newest events were removed" in check.why


def test_the_app_never_updates_or_deletes_an_event(events):
    event = AuditEvent.objects.get(pk=events[0].pk)
    event.username = "mallory"
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()
    with pytest.raises(PermissionError):
        AuditEvent.objects.filter(pk=event.pk).update(username="mallory")
    with pytest.raises(PermissionError):
        AuditEvent.objects.all().delete()
    assert audit.verify_chain().ok


def test_the_admin_shows_the_log_read_only(events, client, personas):
    client.force_login(personas["admin"])
    personas["admin"].is_staff = True
    personas["admin"].is_superuser = True
    personas["admin"].save()
    page = client.get(f"/admin/consumers/auditevent/{events[0].pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.post(f"/admin/consumers/auditevent/{events[0].pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.exclude(action="write-refused").count() == 3  # none deleted
    refused = AuditEvent.objects.get(action="write-refused")  # and the attempt is on the record
    assert refused.username == "admin" and refused.details["path"].endswith("/delete/")


def test_every_role_reads_the_log_and_the_csv_equals_the_page(events, viewer_client):
    page = viewer_client.get("/audit/?cluster=east").content.decode()
    assert f'data-event="{events[0].pk}"' in page and f'data-event="{events[2].pk}"' not in page
    download = viewer_client.get("/audit/?cluster=east&format=csv")
    assert download["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode("utf-8-sig"))))
    assert [(r["id"], r["username"], r["action"], r["group"]) for r in rows] == [
        (str(events[1].pk), "ap", "approve", "orders"),
        (str(events[0].pk), "op", "request", "orders"),
    ]
    assert viewer_client.get("/audit/?since=2026-01-02&until=2026-01-01").status_code == 400


def test_the_filter_s_dates_lie_between_2000_and_today(events, viewer_client):
    """As every time typed in the console (consumers/web/inputs.when_problem): since from 2000-01-01
    to today (UTC), until up to a day ahead; anything else is a 400 naming the field, for the
    page and the CSV alike."""
    today = timezone.now().date()
    refused = {
        "since=0001-01-01": "must be on or after 2000-01-01 (UTC)",
        "since=1999-12-31": "must be on or after 2000-01-01 (UTC)",
        f"since={today + dt.timedelta(days=1)}": "UTC is in the future: nothing is stored after it yet",
        f"until={today + dt.timedelta(days=2)}": f"{today + dt.timedelta(days=2)} 00:00:00 UTC is in the future",
        "until=9999-12-31": "9999-12-31 00:00:00 UTC is in the future",
    }
    for query, says in refused.items():
        for extra in ("", "&format=csv"):
            response = viewer_client.get(f"/audit/?{query}{extra}")
            assert response.status_code == 400 and says in response.content.decode(), query
            assert query.split("=")[0] in response.content.decode()
    for query in ("since=2000-01-01", f"since={today}", f"until={today + dt.timedelta(days=1)}"):
        assert viewer_client.get(f"/audit/?{query}").status_code == 200, query
