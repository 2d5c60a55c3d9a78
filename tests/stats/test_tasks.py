"""The nightly task only enqueues: the run is run_statistics's, with STATS_RUN_TIME_LIMIT, never
inside the scheduling task's global limit (a 1,500-group day outlasts 300 s)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from consumers.models import Cluster
from consumers.stats import tasks
from consumers.stats.models import StatsRun


def test_the_nightly_task_requests_yesterday_and_queues_its_run(db, settings, tmp_path, monkeypatch):
    settings.STATS_RUN_DIR = tmp_path / "runs"
    settings.STATS_OUTPUT_URL = str(tmp_path / "stats")
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    queued = []
    monkeypatch.setattr(tasks.run_statistics, "delay", queued.append)
    monkeypatch.setattr("consumers.stats.runs.execute_run", lambda pk: (_ for _ in ()).throw(AssertionError("ran")))
    answer = tasks.nightly_statistics.run()
    run = StatsRun.objects.get()
    yesterday = timezone.now().date() - dt.timedelta(days=1)
    assert (run.first, run.last, run.trigger, run.state) == (yesterday, yesterday, "nightly", "queued")
    assert queued == [run.pk] and answer == f"queued run #{run.pk}"
    assert tasks.nightly_statistics.run().startswith("refused")  # the day is already claimed
