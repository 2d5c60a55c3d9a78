"""Celery task of the DLQ redrive: a thin wrapper; the service makes a second delivery harmless."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings


@shared_task(ignore_result=True, acks_late=True, soft_time_limit=settings.REDRIVE_TIME_LIMIT,
             time_limit=settings.REDRIVE_TIME_LIMIT + 30)  # fmt: skip
def run_redrive(job_id: int) -> str:
    from .models import RedriveJob
    from .runner import run_job

    job = run_job(job_id)
    if job is not None and job.state == RedriveJob.State.QUEUED:  # handed on at the soft time limit
        run_redrive.delay(job_id)
    return job.state if job else "another worker has it"
