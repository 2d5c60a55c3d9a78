"""A redrive job's progress: the rate over the last 10 s counted from the sends recorded (the
rate since the start hides a pause and a burst), on the page and in the API."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from consumers.dlq import redrive
from consumers.dlq.models import RedriveJob, RedrivenMessage
from consumers.models import Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(personas):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    now = timezone.now()
    job = RedriveJob.objects.create(cluster=cluster, group="orders", target="group", rate=50, state="running",
                                    total=200, moved=80, created_by=personas["operator"],
                                    started_at=now - dt.timedelta(seconds=40))  # fmt: skip
    # by hand: 30 sends in the last 10 s (at 1-9 s ago), 50 earlier (at 12-40 s ago): 3.0 msg/s now
    ages = [1 + (i % 9) for i in range(30)] + [12 + (i % 28) for i in range(50)]
    RedrivenMessage.objects.bulk_create(
        RedrivenMessage(job=job, cluster=cluster, group="orders", source="broker-a#0", source_offset=i, msg_id=f"m{i}",
                        target_topic="%RETRY%orders", sent_msg_id=f"s{i}", sent_at=now - dt.timedelta(seconds=age))
        for i, age in enumerate(ages)
    )  # fmt: skip
    return job


def test_the_last_10_seconds_rate_is_what_was_sent_in_them(running, client, personas):
    shown = redrive.progress(running)
    assert shown["rate_last_10s"] == 3.0 and shown["measured_rate"] == 2.0  # 80 in 40 s since the start
    client.force_login(personas["viewer"])
    page = client.get(f"/dlq/jobs/{running.pk}/").content.decode()
    assert '<span id="job-rate-10s">3.0</span> msg/s over the last 10 s (set: 50)' in page
    assert f'href="/dlq/east/orders/?job={running.pk}"' in page  # the dead letters that came back
    assert client.get(f"/api/dlq/jobs/{running.pk}/").json()["rate_last_10s"] == 3.0


def test_a_job_not_running_has_no_current_rate(running):
    RedriveJob.objects.filter(pk=running.pk).update(state="paused")
    running.refresh_from_db()
    assert redrive.progress(running)["rate_last_10s"] is None
