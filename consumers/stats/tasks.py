"""Celery tasks of the statistics: thin wrappers; runs.py does the work in a child process."""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from ..jobs import claims
from .models import StatsRun

log = logging.getLogger(__name__)


@shared_task(ignore_result=True, acks_late=True, soft_time_limit=settings.STATS_RUN_TIME_LIMIT + 60,
             time_limit=settings.STATS_RUN_TIME_LIMIT + 120)  # fmt: skip
def run_statistics(run_id: int) -> str:
    from .runs import execute_run

    return execute_run(run_id).state


@shared_task(ignore_result=True)
def nightly_statistics() -> str:
    """Yesterday (UTC), every cluster. Refused (and logged) if a run already has that day. Only
    enqueues: the run is run_statistics's, whose limits come from STATS_RUN_TIME_LIMIT (this
    task has the global limit, far shorter than a large site's run)."""
    from .runs import RunRefused, RunRequest, prune, release_abandoned, request_run

    release_abandoned()
    prune()
    yesterday = timezone.now().date() - dt.timedelta(days=1)
    try:
        run = request_run(RunRequest(yesterday, yesterday), trigger="nightly")
    except RunRefused as exc:
        log.warning("nightly statistics for %s not started: %s", yesterday, exc)
        return f"refused: {exc}"
    run_statistics.delay(run.pk)
    return f"queued run #{run.pk}"


def _give_up(run_id: int, token: str, why: str) -> None:
    from .runs import give_up

    give_up(run_id, token, why)


# a run whose worker went silent is taken over by the next run_statistics (consumers/jobs/claims.py)
# (one killed at the task's hard limit would only start over and be killed again: it is ended)
claims.register(StatsRun, running=StatsRun.State.RUNNING, requeue=lambda pk: run_statistics.delay(pk),
                hard_limit=lambda: run_statistics.time_limit, give_up=_give_up)  # fmt: skip
