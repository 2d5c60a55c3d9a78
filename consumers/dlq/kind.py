"""DLQ redrives as a kind of change (the large ones need an approver).

An approved request only claims the request and queues the job's own task (`run_redrive`, with
REDRIVE_TIME_LIMIT), never runs the job inside the workflow's task: a redrive may take hours.
How a job's end moves its request is in `ending.py`."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ..changes import kinds, workflow
from ..changes.guards import SYSTEM
from ..changes.models import ChangeRequest, State
from ..jobs import claims
from .models import RedriveJob


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
