"""Every job's page says when its worker went silent (consumers/jobs/claims.py): a reset's change
request, a report build, a statistics run and a redrive (the last two: their own tests)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from consumers.changes import workflow
from consumers.changes.models import ChangeRequest
from consumers.changes.workflow import Actor
from consumers.models import Cluster
from consumers.reports.models import Report

pytestmark = pytest.mark.django_db


def _silent(settings) -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS + 5)


def test_a_running_reset_whose_worker_is_silent_says_so(client, personas, settings):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    plan = {"rows": [], "totals": {}, "warnings": [], "online": False}
    change = workflow.submit(actor=Actor(personas["operator"], "10.0.0.1"), cluster=cluster, group="orders",
                             kind="reset", params={"strategy": "earliest"}, plan=plan, reason="replay")  # fmt: skip
    client.force_login(personas["viewer"])
    ChangeRequest.objects.filter(pk=change.pk).update(state="running", heartbeat_at=timezone.now())
    assert 'id="change-silent"' not in client.get(f"/changes/{change.pk}/").content.decode()
    ChangeRequest.objects.filter(pk=change.pk).update(heartbeat_at=_silent(settings))
    page = client.get(f"/changes/{change.pk}/").content.decode()
    assert 'id="change-silent"' in page and "another worker takes the run over" in page


def test_a_report_whose_builder_is_silent_says_so(client, personas, settings):
    now = timezone.now()
    report = Report.objects.create(title="weekly", clusters=["east"], first=dt.date(2026, 1, 1),
                                   last=dt.date(2026, 1, 7), formats=["csv"], state="running", heartbeat_at=now,
                                   expires_at=now + dt.timedelta(days=1))  # fmt: skip
    client.force_login(personas["viewer"])
    assert f'id="report-silent-{report.pk}"' not in client.get(f"/reports/{report.pk}/row/").content.decode()
    Report.objects.filter(pk=report.pk).update(heartbeat_at=_silent(settings))
    assert f'id="report-silent-{report.pk}"' in client.get(f"/reports/{report.pk}/row/").content.decode()
