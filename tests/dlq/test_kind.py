"""A redrive that needed an approver, through the kind-agnostic workflow: approval only queues
the job's own task; whatever ends the job ends its request the same way; a running job whose
worker went silent is handed to a new worker, approved or not. (No broker: the job's end is
reached through the runner's own end functions.)"""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from consumers.changes import tasks, workflow
from consumers.changes.guards import Actor
from consumers.changes.models import ChangeRequest, State
from consumers.changes.services import decide
from consumers.dlq import ending, redrive, runner
from consumers.dlq.ending import request_state_for
from consumers.dlq.models import RedriveJob
from consumers.models import Cluster


@pytest.fixture
def queued(monkeypatch):
    """Tasks queued by the code under test, in order (no worker here)."""
    calls = []
    monkeypatch.setattr("consumers.dlq.tasks.run_redrive.delay", lambda pk: calls.append(("run_redrive", pk)))
    monkeypatch.setattr(tasks.execute_change, "delay", lambda pk: calls.append(("execute_change", pk)))
    return calls


@pytest.fixture
def waiting(personas):
    """A large redrive waiting for an approver, as plan_redrive leaves it."""
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    job = RedriveJob.objects.create(cluster=cluster, group="orders", target="group", rate=10, total=5000,
                                    state="awaiting-approval", created_by=personas["operator"])  # fmt: skip
    job.change_request = workflow.submit(actor=Actor(personas["operator"]), cluster=cluster, group="orders",
                                         kind="redrive", params={"job": job.pk}, plan={"job": job.pk},
                                         reason="replay after the fix")  # fmt: skip
    job.save(update_fields=["change_request"])
    return job


def _approve(job, personas, queued):
    decide(job.change_request, "approve", actor=Actor(personas["approver"]))
    tasks.execute_change.run(job.change_request_id)  # what the worker does with the queued task
    job.refresh_from_db()
    return job


def _claim(job) -> str:
    """What run_job's claim does (queued -> running with a token)."""
    RedriveJob.objects.filter(pk=job.pk).update(state="running", run_token="t1", heartbeat_at=timezone.now(),
                                                started_at=timezone.now())  # fmt: skip
    return "t1"


def test_approval_queues_the_jobs_own_task_and_the_request_ends_with_the_job(
    personas, waiting, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = _approve(waiting, personas, queued)
    assert queued == [("execute_change", job.change_request_id), ("run_redrive", job.pk)]
    assert job.state == RedriveJob.State.QUEUED and job.change_request.state == State.RUNNING
    token = _claim(job)
    RedriveJob.objects.filter(pk=job.pk).update(moved=5000)
    ending.finish(job, token)
    request = ChangeRequest.objects.get(pk=job.change_request_id)
    assert request.state == State.DONE and request.result == {"job": job.pk, "moved": 5000, "failed": 0}


def test_paused_and_resumed_then_done_ends_the_request(personas, waiting, queued, django_capture_on_commit_callbacks):
    """Before: a job resumed after a pause finished through run_redrive and left its request
    running for ever."""
    with django_capture_on_commit_callbacks(execute=True):
        job = _approve(waiting, personas, queued)
        first = _claim(job)
        redrive.pause(job, actor=Actor(personas["operator"]))
        runner._let_go(job, first)  # its worker records the window in flight and stops
        redrive.resume(RedriveJob.objects.get(pk=job.pk), actor=Actor(personas["operator"]))
    assert ChangeRequest.objects.get(pk=job.change_request_id).state == State.RUNNING  # paused: still its run
    token = _claim(job)
    RedriveJob.objects.filter(pk=job.pk).update(moved=5000)
    ending.finish(job, token)
    assert ChangeRequest.objects.get(pk=job.change_request_id).state == State.DONE


@pytest.mark.parametrize(("moved", "expected"), [(0, State.CANCELLED), (1200, State.PARTIAL)])
def test_a_cancelled_job_ends_its_request_truthfully(personas, waiting, queued, moved, expected):
    job = _approve(waiting, personas, queued)
    _claim(job)
    RedriveJob.objects.filter(pk=job.pk).update(moved=moved)
    redrive.cancel(RedriveJob.objects.get(pk=job.pk), actor=Actor(personas["operator"]))
    assert ChangeRequest.objects.get(pk=job.change_request_id).state == expected


def test_a_failed_job_ends_its_request_failed_or_partial(personas, waiting, queued):
    job = _approve(waiting, personas, queued)
    token = _claim(job)
    RedriveJob.objects.filter(pk=job.pk).update(moved=10)
    ending.fail(job, token, "BrokerUnreachable: broker-a")
    assert ChangeRequest.objects.get(pk=job.change_request_id).state == State.PARTIAL


def test_a_job_cancelled_while_waiting_takes_its_request_and_a_rejected_request_its_job(personas, waiting, queued):
    redrive.cancel(waiting, actor=Actor(personas["operator"]))
    assert ChangeRequest.objects.get(pk=waiting.change_request_id).state == State.CANCELLED
    with pytest.raises(workflow.ChangeRefused):  # nothing left to approve
        decide(ChangeRequest.objects.get(pk=waiting.change_request_id), "approve", actor=Actor(personas["approver"]))


def test_an_expired_request_ends_its_waiting_job(personas, waiting):
    """Before: the request expired and its job waited for an approver for ever."""
    ChangeRequest.objects.filter(pk=waiting.change_request_id).update(expires_at=timezone.now())
    assert workflow.expire_due() == 1
    waiting.refresh_from_db()
    assert waiting.state == RedriveJob.State.CANCELLED and waiting.finished_at is not None


def test_a_silent_running_job_is_taken_over_approved_or_not(personas, waiting, queued, settings):
    """Before: housekeeping looked only at requests with a stale heartbeat, and an approved
    redrive's request never has one: a killed worker's job stayed running for an hour."""
    job = _approve(waiting, personas, queued)
    _claim(job)
    plain = RedriveJob.objects.create(cluster=job.cluster, group="other", target="group", rate=10, total=5,
                                      state="running", heartbeat_at=timezone.now(),
                                      created_by=personas["operator"])  # fmt: skip
    queued.clear()
    tasks.housekeeping.run()
    assert queued == []  # both alive
    RedriveJob.objects.update(heartbeat_at=timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS + 1))
    tasks.housekeeping.run()
    assert sorted(queued) == [("run_redrive", job.pk), ("run_redrive", plain.pk)]


def test_refresh_and_undo_are_a_resets_decisions_only(personas, waiting):
    with pytest.raises(workflow.ChangeRefused, match="unknown action 'refresh' for a DLQ redrive"):
        decide(waiting.change_request, "refresh", actor=Actor(personas["operator"]))


@pytest.mark.parametrize(
    ("state", "moved", "expected"),
    [("done", 5, State.DONE), ("failed", 0, State.FAILED), ("failed", 3, State.PARTIAL),
     ("cancelled", 0, State.CANCELLED), ("cancelled", 3, State.PARTIAL), ("running", 3, None), ("paused", 3, None)],
)  # fmt: skip
def test_one_mapping_from_a_jobs_state_to_its_requests(state, moved, expected):
    assert request_state_for(RedriveJob(state=state, moved=moved)) == expected


def test_a_soft_time_limit_landing_while_the_job_ends_still_ends_it_and_its_request_once(
    personas, waiting, queued, monkeypatch, django_capture_on_commit_callbacks
):
    """Seen in the suite: the task's soft limit (one signal) came in the middle of _finish, after
    the job's row said done and before its request was ended, which then stayed running."""
    from celery.exceptions import SoftTimeLimitExceeded

    from consumers.audit.models import AuditEvent

    with django_capture_on_commit_callbacks(execute=True):
        job = _approve(waiting, personas, queued)
    token = _claim(job)
    RedriveJob.objects.filter(pk=job.pk).update(moved=5000)
    record, calls = runner.audit.record, []

    def the_signal_lands_here(action, **kwargs):
        calls.append(action)
        if len(calls) == 1:
            raise SoftTimeLimitExceeded()
        return record(action, **kwargs)

    monkeypatch.setattr(runner.audit, "record", the_signal_lands_here)
    ended = ending.despite_the_soft_limit(ending.finish, job, token)
    assert ended.state == RedriveJob.State.DONE and calls == ["redrive-result", "redrive-result", "result"]
    assert ChangeRequest.objects.get(pk=job.change_request_id).state == State.DONE
    assert AuditEvent.objects.filter(action="redrive-result").count() == 1  # the interrupted one rolled back


def test_a_soft_time_limit_landing_while_the_job_fails_records_the_failure_and_ends_the_request_once(
    personas, waiting, queued, monkeypatch, django_capture_on_commit_callbacks
):
    """As for finish: the signal in the middle of fail, first in its audit, then in the request's
    end (after the job's row said failed): run again, the failure is recorded once, audited once,
    and the request ends."""
    from celery.exceptions import SoftTimeLimitExceeded

    from consumers.audit.models import AuditEvent

    with django_capture_on_commit_callbacks(execute=True):
        job = _approve(waiting, personas, queued)
    token = _claim(job)
    record, calls = ending.audit.record, []

    def the_signal_lands_here(action, **kwargs):
        calls.append(action)
        if len(calls) in (1, 3):  # the job's audit, then the request's end
            raise SoftTimeLimitExceeded()
        return record(action, **kwargs)

    monkeypatch.setattr(ending.audit, "record", the_signal_lands_here)
    with pytest.raises(SoftTimeLimitExceeded):  # a third landing is not caught: the worker's limit decides
        ending.despite_the_soft_limit(ending.fail, job, token, "BrokerUnreachable: broker-a")
    ending.despite_the_soft_limit(ending.fail, job, token, "BrokerUnreachable: broker-a")
    failed = RedriveJob.objects.get(pk=job.pk)
    assert failed.state == RedriveJob.State.FAILED and failed.failures == [{"error": "BrokerUnreachable: broker-a"}]
    assert ChangeRequest.objects.get(pk=job.change_request_id).state == State.FAILED
    assert AuditEvent.objects.filter(action="redrive-result").count() == 1
