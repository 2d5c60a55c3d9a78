"""Celery tasks of the lag reports: thin wrappers over services.py."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from ..jobs import claims
from .models import Report


@shared_task(ignore_result=True, acks_late=True, soft_time_limit=settings.REPORT_BUILD_TIME_LIMIT,
             time_limit=settings.REPORT_BUILD_TIME_LIMIT + 60)  # fmt: skip
def build_report(report_id: int) -> str:
    from .services import build_report as build

    return build(report_id).state


@shared_task(ignore_result=True)
def weekly_reports() -> int:
    """Only enqueues: each report is built by its own build_report task."""
    from .services import weekly_reports as make

    return len(make(enqueue=build_report.delay))


@shared_task(ignore_result=True)
def expire_reports() -> int:
    from .services import expire_reports as expire

    return expire()


def _give_up(report_id: int, token: str, why: str) -> None:
    from .services import give_up

    give_up(report_id, token, why)


# a run whose worker went silent is taken over by the next build_report (consumers/jobs/claims.py)
# (one killed at the task's hard limit would only start over and be killed again: it is ended)
claims.register(Report, running=Report.State.RUNNING, requeue=lambda pk: build_report.delay(pk),
                hard_limit=lambda: build_report.time_limit, give_up=_give_up)  # fmt: skip
