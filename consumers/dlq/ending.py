"""How a redrive job ends (finished, failed, handed on at the soft time limit), and the one place
where its end decides its change request's state.

Whatever ends the job (done, partial, failed, cancelled, rejected while waiting), `job_ended`
moves the request to the state that says the same, so a request never stays running after its
job. (Apart from kind.py, which queues tasks: the runner calls this, and the tasks call the
runner.)"""

from __future__ import annotations

import logging

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.utils import timezone

from .. import audit
from ..changes import workflow
from ..changes.guards import SYSTEM
from ..changes.models import State
from .models import RedriveJob

log = logging.getLogger(__name__)

# a job's final state -> its request's (partial: some messages moved before it ended)
_REQUEST_STATE = {
    RedriveJob.State.DONE: (State.DONE, State.DONE),
    RedriveJob.State.PARTIAL: (State.PARTIAL, State.PARTIAL),
    RedriveJob.State.FAILED: (State.FAILED, State.PARTIAL),
    RedriveJob.State.CANCELLED: (State.CANCELLED, State.PARTIAL),
}


def request_state_for(job: RedriveJob) -> str | None:
    """The state a job's request must have once the job ended (None: the job has not ended)."""
    states = _REQUEST_STATE.get(job.state)
    return None if states is None else states[1 if job.moved else 0]


def job_ended(job: RedriveJob) -> None:
    """Called wherever a job reaches a final state: end its request (if it has one) the same way."""
    if job.change_request_id is None:
        return
    to = request_state_for(job)
    if to is None:
        return
    details = {"job": job.pk, "job_state": job.state, "moved": job.moved, "failed": job.failed}
    result = {"job": job.pk, "moved": job.moved, "failed": job.failed}
    if job.recovered:
        result["recovered"] = job.recovered  # of the moved: found on the target after a worker died
    if job.untouched:
        result["untouched"] = job.untouched  # named on the request's page as "left as they were"
    # pending too: a job cancelled while it waited for an approver takes its request with it
    expected = {State.PENDING, State.APPROVED, State.RUNNING}
    workflow.transition(job.change_request, expected, to, actor=SYSTEM, action="result", details=details,
                        result=result, finished_at=timezone.now())  # fmt: skip


def despite_the_soft_limit(step, *args):
    """An ending step run to its end though the soft time limit (one signal, raised wherever the
    task is) lands in it: in finish it left a job done and its request running for good. Each
    step moves the job from the state it expects, with its audit in one transaction: run again,
    it completes what was interrupted."""
    try:
        return step(*args)
    except SoftTimeLimitExceeded:
        log.info("the soft time limit came while ending a redrive job: ending it again")
        return step(*args)


def finish(job: RedriveJob, token: str) -> RedriveJob:
    job.refresh_from_db()
    if job.failed:
        state = RedriveJob.State.FAILED
    else:  # everything it could read went; brokers left out at planning make it partial
        state = RedriveJob.State.PARTIAL if job.untouched else RedriveJob.State.DONE
    with transaction.atomic():  # the move and its audit, or neither (despite_the_soft_limit)
        if RedriveJob.objects.filter(pk=job.pk, run_token=token, state=RedriveJob.State.RUNNING).update(
            state=state, finished_at=timezone.now()
        ):
            details = {"job": job.pk, "moved": job.moved, "failed": job.failed, "total": job.total,
                       "recovered": job.recovered, "untouched": [u["broker"] for u in job.untouched]}  # fmt: skip
            audit.record("redrive-result", username="system", cluster=job.cluster.name, group=job.group,
                         details=details)  # fmt: skip
    ended = RedriveJob.objects.select_related("change_request").get(pk=job.pk)
    job_ended(ended)
    return ended


def hand_on(job: RedriveJob, token: str) -> RedriveJob:
    """The task reached its soft time limit: queue the job again from its checkpoint (what was
    sent and not recorded is looked for on the target, as after a take-over), so a redrive
    longer than REDRIVE_TIME_LIMIT goes on in a new task instead of being killed mid-window."""
    if RedriveJob.objects.filter(pk=job.pk, run_token=token, state=RedriveJob.State.RUNNING).update(
        state=RedriveJob.State.QUEUED, run_token=""
    ):
        audit.record("redrive-continued", username="system", cluster=job.cluster.name, group=job.group,
                     details={"job": job.pk, "why": "the task's soft time limit (REDRIVE_TIME_LIMIT)"})  # fmt: skip
    return RedriveJob.objects.get(pk=job.pk)


def fail(job: RedriveJob, token: str, error: str) -> None:
    """End the job as failed with the error, and its request with it (once: run again after the
    soft time limit interrupted it, it only completes what was left)."""
    job.refresh_from_db(fields=["failures"])
    with transaction.atomic():  # the move and its audit, or neither (despite_the_soft_limit)
        if RedriveJob.objects.filter(pk=job.pk, run_token=token, state=RedriveJob.State.RUNNING).update(
            state=RedriveJob.State.FAILED,
            failures=(job.failures + [{"error": error}])[-50:],
            finished_at=timezone.now(),
        ):
            audit.record("redrive-result", username="system", cluster=job.cluster.name, group=job.group,
                         details={"job": job.pk, "error": error})  # fmt: skip
    ended = RedriveJob.objects.select_related("change_request").get(pk=job.pk)
    if ended.run_token == token:  # else taken over meanwhile: the new run ends it
        job_ended(ended)
