"""The one way a long job runs exactly once across workers, whatever the job: resets, redrives,
statistics runs, report builds.

- Claim: a conditional UPDATE from a ready state to the running state that stores a new run
  token; a second delivery of the task, or a second worker, finds it running and leaves.
- Heartbeat: the run refreshes `heartbeat_at`, only while the token is still its own (a run
  that was taken over learns it at its next beat and stops).
- Take-over: a running job whose heartbeat is older than CHANGE_RUN_STALE_SECONDS has a dead
  worker; a new run claims it with a new token and continues from what the job recorded. The
  periodic `requeue_silent` (consumers.tasks) finds such jobs of every registered model and
  queues their task again, so a killed worker costs seconds, not a visibility timeout.

The models have `state`, `run_token`, `heartbeat_at` and `started_at` fields.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    pk: int
    token: str
    taken_over: bool  # a previous run's worker went silent: this run continues its work


def stale_before() -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS)


def claim(model, pk: int, *, ready: Iterable[str], running: str, **fields) -> Claim | None:
    """Start the job (from a ready state), or take it over from a silent worker; None: another
    live run has it, or it is not runnable."""
    token, now = uuid.uuid4().hex, timezone.now()
    if model.objects.filter(pk=pk, state__in=list(ready)).update(
        state=running, run_token=token, heartbeat_at=now, started_at=now, **fields
    ):
        return Claim(pk, token, taken_over=False)
    taken = take_over(model, pk, running=running)
    return Claim(pk, taken, taken_over=True) if taken else None


def take_over(model, pk: int, *, running: str, from_token: str | None = None) -> str | None:
    """A new token for a running job whose heartbeat is stale (and, if given, whose token is
    still `from_token`); None when its worker is alive or someone else took it first."""
    token = uuid.uuid4().hex
    rows = model.objects.filter(pk=pk, state=running, heartbeat_at__lt=stale_before())
    if from_token is not None:
        rows = rows.filter(run_token=from_token)
    return token if rows.update(run_token=token, heartbeat_at=timezone.now()) else None


def beat(model, pk: int, token: str, **fields) -> bool:
    """Refresh the heartbeat (and save `fields`) if the run is still ours."""
    return bool(model.objects.filter(pk=pk, run_token=token).update(heartbeat_at=timezone.now(), **fields))


def beat_period() -> float:
    """How often a live run beats: four beats fit in the take-over's silence."""
    return max(1.0, settings.CHANGE_RUN_STALE_SECONDS / 4)


def heartbeat_age(job, now: dt.datetime | None = None) -> float | None:
    """Seconds since the job's worker last beat (None: it never did)."""
    if job.heartbeat_at is None:
        return None
    return max(0.0, ((now or timezone.now()) - job.heartbeat_at).total_seconds())


def silent_for(job, now: dt.datetime | None = None) -> float | None:
    """Seconds of silence of a run's worker once two beats are missed (long before the
    take-over at CHANGE_RUN_STALE_SECONDS); None while it beats."""
    age = heartbeat_age(job, now)
    return age if age is not None and age > 2 * beat_period() else None


@contextmanager
def beating(model, pk: int, token: str, *, every: float | None = None):
    """Beat from a thread while a long blocking step runs (a spark-submit, a report build)."""
    period = every or beat_period()
    done = threading.Event()

    def loop():
        try:
            while not done.wait(period):
                beat(model, pk, token)
        finally:
            close_old_connections()  # this thread's own database connection

    thread = threading.Thread(target=loop, name=f"heartbeat-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def silent_since(job) -> dt.datetime | None:
    """When a running job's worker last reported, if that is longer ago than a live worker's
    beat (for its page: "worker silent since ...")."""
    if job.heartbeat_at is not None and job.heartbeat_at < stale_before():
        return job.heartbeat_at
    return None


@dataclass(frozen=True)
class _Runner:
    model: type
    running: str
    only: dict
    requeue: Callable[[int], object]
    # for a job that starts over when taken over (no checkpoint): its task's hard time limit,
    # and how to end it failed with a message under the token of the take-over
    hard_limit: Callable[[], float] | None
    give_up: Callable[[int, str, str], object] | None


# what requeue_silent looks after
_RUNNERS: list[_Runner] = []


def register(
    model,
    *,
    running: str,
    requeue: Callable[[int], object],
    only: dict | None = None,
    hard_limit: Callable[[], float] | None = None,
    give_up: Callable[[int, str, str], object] | None = None,
) -> None:
    """`hard_limit` and `give_up` are for jobs that start over when taken over (statistics runs,
    report builds): one silent since longer than its task may live was killed at that limit,
    and starting it again would be cut off at the same point, so it is ended failed, saying so.
    Jobs with checkpoints (resets, redrives) leave them out: a take-over continues them."""
    _RUNNERS.append(_Runner(model, running, only or {}, requeue, hard_limit, give_up))


def requeue_silent() -> list[tuple[str, int]]:
    """Queue a run of every running job whose worker went silent (its claim takes it over), or
    end it when it was killed at its time limit and would only start over (see register)."""
    queued = []
    for runner in _RUNNERS:
        silent = runner.model.objects.filter(state=runner.running, heartbeat_at__lt=stale_before(), **runner.only)
        for pk, started in silent.values_list("pk", "started_at"):
            name = runner.model.__name__
            limit = runner.hard_limit() if runner.hard_limit else None
            if limit is not None and started is not None and started < timezone.now() - dt.timedelta(seconds=limit):
                token = take_over(runner.model, pk, running=runner.running)
                if token is not None:
                    log.warning("%s #%s: killed at its time limit; ended, not started again", name, pk)
                    runner.give_up(pk, token, time_limit_message(limit))
                continue
            log.warning("%s #%s: its worker is silent; queued again to be taken over", name, pk)
            runner.requeue(pk)
            queued.append((name, pk))
    return queued


def time_limit_message(limit: float) -> str:
    return (
        f"stopped: its worker was killed at the task's time limit ({limit:.0f} s) and the run starts over when "
        "taken over, so it was not started again; raise the limit or give it less to do"
    )
