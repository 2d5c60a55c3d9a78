"""The one claimed-job pattern (consumers/jobs/claims.py), on each model that runs long work: a job
runs once however often its task is delivered; a run whose worker went silent is taken over,
and the old run learns it at its next beat; housekeeping queues every silent job again."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone

from consumers.changes import tasks as change_tasks
from consumers.changes.models import ChangeRequest
from consumers.dlq import tasks as dlq_tasks
from consumers.dlq.models import RedriveJob
from consumers.jobs import claims
from consumers.models import Cluster
from consumers.reports import tasks as report_tasks
from consumers.reports.models import Report
from consumers.stats import tasks as stats_tasks
from consumers.stats.models import StatsRun


@pytest.fixture
def jobs(personas):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    now = timezone.now()
    return {
        "redrive": RedriveJob.objects.create(cluster=cluster, group="g", target="group", rate=1, state="queued",
                                             created_by=personas["operator"]),
        "statistics": StatsRun.objects.create(first=now.date(), last=now.date(), clusters=["east"], trigger="page",
                                              master="local[1]"),
        "report": Report.objects.create(title="r", clusters=["east"], first=now.date(), last=now.date(),
                                        formats=["csv"], expires_at=now + dt.timedelta(days=1)),
        "reset": ChangeRequest.objects.create(cluster=cluster, group="g", kind="reset", planned_at=now, reason="x",
                                              state="approved", requested_by=personas["operator"], expires_at=now),
    }  # fmt: skip


READY = {"redrive": "queued", "statistics": "queued", "report": "queued", "reset": "approved"}


@pytest.mark.parametrize("kind", READY)
def test_claimed_once_taken_over_when_silent_and_the_old_run_learns_it(jobs, kind, settings):
    job = jobs[kind]
    model = type(job)
    first = claims.claim(model, job.pk, ready={READY[kind]}, running="running")
    assert first is not None and not first.taken_over
    assert claims.claim(model, job.pk, ready={READY[kind]}, running="running") is None  # delivered twice
    assert claims.beat(model, job.pk, first.token)
    settings.CHANGE_RUN_STALE_SECONDS = 0  # its worker is gone
    time.sleep(0.01)
    second = claims.claim(model, job.pk, ready={READY[kind]}, running="running")
    assert second is not None and second.taken_over and second.token != first.token
    assert not claims.beat(model, job.pk, first.token)  # the old run stops at its next beat
    assert model.objects.get(pk=job.pk).run_token == second.token


def queue_nothing(monkeypatch) -> list[tuple[str, int]]:
    """Every long job's task, as (task, pk) when queued instead of sent to a worker."""
    queued = []
    for module, name in ((dlq_tasks, "run_redrive"), (stats_tasks, "run_statistics"),
                         (report_tasks, "build_report"), (change_tasks, "execute_change")):  # fmt: skip
        monkeypatch.setattr(getattr(module, name), "delay", lambda pk, name=name: queued.append((name, pk)))
    return queued


def test_housekeeping_queues_every_silent_job_again(jobs, settings, monkeypatch):
    queued = queue_nothing(monkeypatch)
    for kind, job in jobs.items():
        claims.claim(type(job), job.pk, ready={READY[kind]}, running="running")
    change_tasks.housekeeping.run()
    assert queued == []  # every worker alive
    for job in jobs.values():
        type(job).objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - dt.timedelta(minutes=10))
    change_tasks.housekeeping.run()
    expected = [("run_redrive", jobs["redrive"].pk), ("run_statistics", jobs["statistics"].pk),
                ("build_report", jobs["report"].pk), ("execute_change", jobs["reset"].pk)]  # fmt: skip
    assert sorted(queued) == sorted(expected)


def test_a_job_killed_at_its_hard_limit_is_ended_if_it_starts_over_and_resumed_if_it_has_checkpoints(
    jobs, settings, monkeypatch
):
    """Prefork kills a task at its hard time limit. A statistics run or a report build would
    start over when taken over and be killed at the same point again, forever: it is ended,
    failed, saying so. A redrive or a reset continues from its checkpoint: it is queued again."""
    queued = queue_nothing(monkeypatch)
    for kind, job in jobs.items():
        claims.claim(type(job), job.pk, ready={READY[kind]}, running="running")
        limit = {
            "statistics": stats_tasks.run_statistics.time_limit,
            "report": report_tasks.build_report.time_limit,
            "redrive": dlq_tasks.run_redrive.time_limit,
            "reset": settings.CHANGE_RUN_TIME_LIMIT,
        }[kind]
        started = timezone.now() - dt.timedelta(seconds=limit + 60)  # it has lived longer than its task may
        type(job).objects.filter(pk=job.pk).update(started_at=started, heartbeat_at=started)
    change_tasks.housekeeping.run()
    assert sorted(queued) == sorted([("run_redrive", jobs["redrive"].pk), ("execute_change", jobs["reset"].pk)])
    run, report = StatsRun.objects.get(pk=jobs["statistics"].pk), Report.objects.get(pk=jobs["report"].pk)
    for ended, limit in ((run, stats_tasks.run_statistics.time_limit), (report, report_tasks.build_report.time_limit)):
        assert ended.state == "failed" and ended.finished_at is not None
        why = ended.error_tail if isinstance(ended, StatsRun) else ended.error
        assert f"killed at the task's time limit ({limit:.0f} s)" in why and "not started again" in why
    assert not run.claimed_days.exists()  # its days are free for the next run
    change_tasks.housekeeping.run()
    assert len(queued) == 4  # the ended ones are not looked at again


@pytest.mark.django_db(transaction=True)  # the beating thread has a connection of its own
def test_a_long_step_keeps_beating(jobs, settings):
    job = jobs["report"]
    claimed = claims.claim(Report, job.pk, ready={"queued"}, running="running")
    Report.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - dt.timedelta(minutes=5))
    with claims.beating(Report, job.pk, claimed.token, every=0.05):
        time.sleep(0.3)
    assert timezone.now() - Report.objects.get(pk=job.pk).heartbeat_at < dt.timedelta(seconds=1)
    assert claims.silent_since(Report.objects.get(pk=job.pk)) is None
