"""DLQ redrives as a kind of change (the large ones need an approver), and the one place where a
redrive job's state decides its change request's state.

An approved request only claims the request and queues the job's own task (`run_redrive`, with
REDRIVE_TIME_LIMIT), never runs the job inside the workflow's task: a redrive may take hours.
Whatever ends the job (done, failed, cancelled, rejected while waiting), `job_ended` moves the
request to the state that says the same, so a request never stays running after its job."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .. import claims
from ..changes import kinds, workflow
from ..changes.models import ChangeRequest, State
from ..core import SYSTEM
from .models import RedriveJob

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


def _execute(request_id: int) -> str:
    from .tasks import run_redrive

    request = ChangeRequest.objects.get(pk=request_id)
    claimed = workflow.transition(request, {State.APPROVED}, State.RUNNING, actor=SYSTEM, action="run",
                                  started_at=timezone.now())  # fmt: skip
    if claimed is None:
        return "another worker has it"
    with transaction.atomic():
        job = RedriveJob.objects.select_for_update().get(change_request=claimed)
        RedriveJob.objects.filter(pk=job.pk, state=RedriveJob.State.AWAITING_APPROVAL).update(
            state=RedriveJob.State.QUEUED
        )
    transaction.on_commit(lambda: run_redrive.delay(job.pk))
    return f"redrive #{job.pk} queued"


def _ended_unrun(request: ChangeRequest) -> None:
    """Rejected, cancelled or expired before it ran: the job waiting for it ends too."""
    ended = RedriveJob.State.REJECTED if request.state == State.REJECTED else RedriveJob.State.CANCELLED
    RedriveJob.objects.filter(change_request=request, state=RedriveJob.State.AWAITING_APPROVAL).update(
        state=ended, finished_at=timezone.now()
    )


def _requeue(job_id: int) -> None:
    from .tasks import run_redrive

    run_redrive.delay(job_id)


REDRIVE = kinds.register(kinds.ChangeKind(name=ChangeRequest.Kind.REDRIVE, execute=_execute, ended_unrun=_ended_unrun))
# a running job whose worker went silent, approved or not, is taken over by the next run_redrive
claims.register(RedriveJob, running=RedriveJob.State.RUNNING, requeue=_requeue)
