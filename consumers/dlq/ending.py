"""The one place where a redrive job's end decides its change request's state.

Whatever ends the job (done, partial, failed, cancelled, rejected while waiting), `job_ended`
moves the request to the state that says the same, so a request never stays running after its
job. (Apart from kind.py, which queues tasks: the runner calls this, and the tasks call the
runner.)"""

from __future__ import annotations

from django.utils import timezone

from ..changes import workflow
from ..changes.guards import SYSTEM
from ..changes.models import State
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
