"""A job paused or cancelled while its worker still sends the window in flight says "pausing"
or "cancelling" until that worker lets go; a worker that misses two heartbeats is named silent
on the page long before the take-over."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from consumers.changes.guards import ChangeRefused
from consumers.changes.workflow import Actor
from consumers.dlq import redrive, runner
from consumers.dlq.models import RedriveJob
from consumers.jobs import claims
from consumers.models import Cluster


@pytest.fixture
def job(personas, db):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    return RedriveJob.objects.create(cluster=cluster, group="orders", target="group", rate=10, state="running",
                                     total=5000, run_token="worker-1", heartbeat_at=timezone.now(),
                                     started_at=timezone.now(), created_by=personas["operator"])  # fmt: skip


def test_paused_while_its_worker_sends_is_pausing_until_the_worker_lets_go(job, personas, monkeypatch):
    monkeypatch.setattr("consumers.dlq.redrive._enqueue", lambda job: None)
    actor = Actor(personas["operator"])
    paused = redrive.pause(job, actor=actor)
    assert paused.state == "paused" and paused.shown_state == "pausing"
    with pytest.raises(ChangeRefused, match="pausing") as refused:  # two workers on one job, never
        redrive.resume(paused, actor=actor)
    assert refused.value.status == 409 and RedriveJob.objects.get(pk=job.pk).state == "paused"
    runner._let_go(paused, "another-token")  # a take-over's token is not this worker's to clear
    assert RedriveJob.objects.get(pk=job.pk).shown_state == "pausing"
    let_go = runner._let_go(paused, "worker-1")
    assert let_go.shown_state == "paused" and let_go.run_token == ""
    assert redrive.resume(let_go, actor=actor).state == "queued"


def test_a_running_job_is_never_let_go_and_a_silent_pausing_worker_counts_as_paused(job, settings):
    assert runner._let_go(job, "worker-1").run_token == "worker-1"  # still running: nothing to let go
    RedriveJob.objects.filter(pk=job.pk).update(state="cancelled")
    assert RedriveJob.objects.get(pk=job.pk).shown_state == "cancelling"
    silent = timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS + 1)
    RedriveJob.objects.filter(pk=job.pk).update(heartbeat_at=silent)  # the worker died mid-window
    assert RedriveJob.objects.get(pk=job.pk).shown_state == "cancelled"


def test_two_missed_heartbeats_are_named_on_the_page_and_in_the_api_before_the_take_over(
    job, client, personas, settings
):
    settings.CHANGE_RUN_STALE_SECONDS = 120  # a beat every 30 s: silent from 60 s, taken over at 120 s
    client.force_login(personas["viewer"])
    RedriveJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - dt.timedelta(seconds=20))
    page = client.get(f"/dlq/jobs/{job.pk}/").content.decode()
    assert re.search(r'id="heartbeat-age">2[01]<', page) and 'id="job-quiet"' not in page
    assert client.get(f"/api/dlq/jobs/{job.pk}/").json()["silent_seconds"] is None
    RedriveJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - dt.timedelta(seconds=75))
    page = client.get(f"/dlq/jobs/{job.pk}/").content.decode()
    assert 'id="job-quiet"' in page and re.search("Worker silent for 7[56] s", page) and "after 120 s" in page
    data = client.get(f"/api/dlq/jobs/{job.pk}/").json()
    assert 74 <= data["silent_seconds"] <= 77 and data["shown_state"] == "running"


@pytest.mark.parametrize(("age", "silent"), [(None, None), (0, None), (60, None), (61, 61)])
def test_silence_starts_after_two_beats(settings, age, silent):
    settings.CHANGE_RUN_STALE_SECONDS = 120
    now = timezone.now()

    class Job:
        heartbeat_at = None if age is None else now - dt.timedelta(seconds=age)

    assert claims.beat_period() == 30 and claims.silent_for(Job, now) == silent
