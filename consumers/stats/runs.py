"""Running the statistics job: claim the days, launch spark-submit as a child process, keep its
log, load its small per-day rows into the database, record how it went.

`request_run` validates and claims (cluster, day) pairs in one transaction: RunDay's unique
constraint refuses a run that overlaps one still claimed. `execute_run` claims the run (consumers/jobs/claims.py),
so a task delivered twice runs it once and a run whose worker died is taken over; the claim is
released when the run ends, whatever the outcome. A run still "running" (its worker died) or
still "queued" (no worker took it) past STATS_RUN_TIME_LIMIT is failed and released by
`release_abandoned`.

Each run of the job is an attempt (consumers/jobs/processes.py): its spark-submit dies with its
worker, a take-over kills it if it did not before starting its own, and it has its own folder
(params, summary, log); the run names the attempt whose rows it loaded.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from ..changes.models import ChangeRequest, State
from ..jobs import claims, processes
from ..live.config import history_store
from ..models import Cluster, HealthOverride
from . import gaps
from .models import ClusterDay, GroupDay, RunDay, StatsRun
from .selectors import days_between
from .session import spark_environment, submit_command

log = logging.getLogger(__name__)
ERROR_TAIL_LINES = 40
MAX_DAYS = 366


class RunRefused(Exception):
    """The run cannot start; the message says why for the page, the command and the API."""


@dataclass(frozen=True)
class RunRequest:
    first: dt.date
    last: dt.date
    cluster: str | None = None  # None: every cluster


def request_run(request: RunRequest, *, trigger: str, user=None) -> StatsRun:
    if request.last < request.first:
        raise RunRefused(
            _("the range ends (%(last)s) before it starts (%(first)s)") % {"last": request.last, "first": request.first}
        )
    if (request.last - request.first).days >= MAX_DAYS:
        raise RunRefused(_("at most %(days)s days per run; split the backfill") % {"days": MAX_DAYS})
    if request.first > timezone.now().date():
        raise RunRefused(_("%(first)s is in the future: there is no history for it yet") % {"first": request.first})
    clusters = Cluster.objects.order_by("name")
    if request.cluster is not None:
        clusters = clusters.filter(name=request.cluster)
        if not clusters.exists():
            raise RunRefused(_("unknown cluster %(cluster)r") % {"cluster": request.cluster})
    names = list(clusters.values_list("name", flat=True))
    if not names:
        raise RunRefused(_("no cluster is configured"))
    days = days_between(request.first, request.last)
    try:
        with transaction.atomic():
            run = StatsRun.objects.create(
                first=request.first,
                last=request.last,
                clusters=names,
                trigger=trigger,
                requested_by=user,
                master=settings.STATS_SPARK_MASTER,
            )
            RunDay.objects.bulk_create([RunDay(run=run, cluster=c, date=d) for c in names for d in days])
    except IntegrityError:
        busy = RunDay.objects.filter(cluster__in=names, date__in=days).select_related("run").first()
        which = (
            _("run #%(pk)s (%(cluster)s, %(date)s)") % {"pk": busy.run_id, "cluster": busy.cluster, "date": busy.date}
            if busy
            else _("another run")
        )
        raise RunRefused(
            _("%(which)s is already computing these days; wait for it to finish") % {"which": which}
        ) from None
    return run


def run_parameters(run: StatsRun) -> dict:
    clusters = Cluster.objects.filter(name__in=run.clusters).order_by("name")
    overrides = HealthOverride.objects.filter(cluster__name__in=run.clusters, lag_slo_seconds__isnull=False)
    return {
        "history": history_store().spark_url,
        "output": settings.STATS_OUTPUT_URL,
        "first": run.first.isoformat(),
        "last": run.last.isoformat(),
        "as_of": timezone.now().isoformat(),
        "history_retention_days": settings.HISTORY_RETENTION_DAYS,
        "clusters": [
            {"cluster": c.name, "interval_seconds": c.poll_interval, "slo_seconds": settings.STATS_LAG_SLO_SECONDS}
            for c in clusters
        ],
        "slo_overrides": [
            {"cluster": o.cluster.name, "group": o.group, "slo_seconds": o.lag_slo_seconds}
            for o in overrides.select_related("cluster")
        ],
        "console_resets": console_resets(run),
    }


def console_resets(run: StatsRun) -> list[dict]:
    """Every queue the console reset in the run's days (and the look-back day): the job counts
    those moves as resets, forwards too, and not as consumption."""
    since = dt.datetime.combine(run.first - dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    until = dt.datetime.combine(run.last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    requests = ChangeRequest.objects.filter(
        kind=ChangeRequest.Kind.RESET,
        cluster__name__in=run.clusters,
        started_at__lt=until,
        finished_at__gte=since,
        state__in=[State.DONE, State.PARTIAL, State.FAILED],  # a failed run may have applied some queues
    ).select_related("cluster")
    found = []
    for request in requests:
        rows = {row["label"]: row for row in request.plan.get("rows", [])}
        for label, offset in request.result.get("applied", {}).items():
            row = rows.get(label)
            if row is None:
                continue
            found.append(
                {
                    "cluster": request.cluster.name, "group": request.group, "topic": row["topic"],
                    "broker": row["broker"], "queue_id": row["queue_id"], "to_offset": offset,
                    "started_at": request.started_at.isoformat(), "finished_at": request.finished_at.isoformat(),
                }
            )  # fmt: skip
    return found


def spark_command(params_path: Path, summary_path: Path) -> list[str]:
    return submit_command(
        spark_submit=settings.STATS_SPARK_SUBMIT,
        master=settings.STATS_SPARK_MASTER,
        driver_memory=settings.STATS_DRIVER_MEMORY,
        conf=settings.STATS_SPARK_CONF,
        params=params_path,
        summary=summary_path,
    )


def execute_run(run_id: int) -> StatsRun:
    claimed = claims.claim(StatsRun, run_id, ready={StatsRun.State.QUEUED}, running=StatsRun.State.RUNNING)
    run = StatsRun.objects.get(pk=run_id)
    if claimed is None:
        return run  # a second delivery of the same task, or a live worker has it
    # the job is idempotent (a computed day is a day replaced): a taken-over run starts again,
    # as a new attempt, once the spark-submit of the attempt it replaces is dead (jobs/processes.py)
    with claims.beating(StatsRun, run.pk, claimed.token):
        return _execute(run, claimed.token)


def attempt_dir(run: StatsRun, attempt: int | None = None) -> Path:
    """An attempt's params, summary and log: its own, so a later attempt truncates nothing."""
    return Path(settings.STATS_RUN_DIR) / str(run.pk) / f"attempt-{attempt or run.attempt}"


def _execute(run: StatsRun, token: str) -> StatsRun:
    log_path = None
    try:
        run.attempt = processes.begin_attempt(StatsRun, run.pk, token)  # Superseded: _finish ends nothing
        directory = attempt_dir(run)
        directory.mkdir(parents=True, exist_ok=True)
        params_path, summary_path = directory / "params.json", directory / "summary.json"
        log_path = directory / "log.txt"
        run.log_path = str(log_path)
        StatsRun.objects.filter(pk=run.pk, run_token=token).update(log_path=run.log_path)
        params = run_parameters(run)
        # the files that hold each poll of the days (and the look-back), chosen now: none of
        # them is deleted while the run reads (history_compaction.py); when no poll is in two
        # of them the job needs no deduplication, which would shuffle every row it reads
        inputs = history_store().stats_inputs(run.clusters, days_between(run.first - dt.timedelta(days=1), run.last))
        params.update(history_files=inputs.files, deduplicated=inputs.deduplicated)
        skipped = _skipped_before_spark(run, params, inputs.polled)
        if skipped is not None:  # nothing to compute: no Spark started to find that out
            run.skipped, run.input_rows, run.output_rows = skipped, 0, 0
            return _finish(run, failed=_nothing_computed(skipped), token=token)
        params_path.write_text(json.dumps(params, indent=1))
        with open(log_path, "wb") as out:
            returncode = processes.run(
                processes.Owner(StatsRun, run.pk, token),
                spark_command(params_path, summary_path),
                timeout=settings.STATS_RUN_TIME_LIMIT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=spark_environment(),
                cwd=settings.BASE_DIR,
            )
        if returncode != 0:
            return _finish(run, failed=f"spark-submit exited with {returncode}\n{_tail(log_path)}", token=token)
        summary = json.loads(summary_path.read_text())
        run.input_rows = sum(summary["input_rows"].values())
        run.output_rows = sum(summary["output_rows"].values())
        run.skipped = summary["skipped"]
        if not summary["computed"]:
            # nothing was written: every day the run asked for keeps what it had
            return _finish(run, failed=_nothing_computed(summary["skipped"]), token=token)
        _load_attempt(run, token, summary)
        return _finish(run, token=token)
    except subprocess.TimeoutExpired:
        failed = f"stopped after {settings.STATS_RUN_TIME_LIMIT} s\n{_tail(log_path)}"
        return _finish(run, failed=failed, token=token)
    except Exception as exc:  # recorded on the run, which must never stay "running"
        return _finish(run, failed=f"{type(exc).__name__}: {exc}\n{_tail(log_path)}", token=token)


def _load_attempt(run: StatsRun, token: str, summary: dict) -> None:
    """Load the attempt's rows and name it as the output's, together and only while the run is
    still ours: a run taken over meanwhile is loaded by the attempt that took it."""
    with transaction.atomic():
        if StatsRun.objects.filter(pk=run.pk, run_token=token).update(output_attempt=run.attempt):
            load_summary(summary)


def _skipped_before_spark(run: StatsRun, params: dict, polled: set[tuple[str, str]]) -> list[dict] | None:
    """Every (cluster, day) of the run, with why, when the history has no poll of any of them;
    None when there is something to compute."""
    days = {d.isoformat() for d in days_between(run.first, run.last)}
    if any(date in days for _, date in polled):
        return None
    return gaps.skipped(run.clusters, run.first, run.last, set(), params)


def _nothing_computed(skipped: list[dict]) -> str:
    reasons = sorted({entry["why"] for entry in skipped})
    shown = "; ".join(reasons[:5]) + (f"; and {len(reasons) - 5} more" if len(reasons) > 5 else "")
    return f"nothing computed, every day keeps the statistics it had: {shown}"


def load_summary(summary: dict) -> None:
    """Replace the rows of the (cluster, day) pairs the job computed with its rows (a day
    recomputed is a day replaced); a day it skipped keeps its rows."""
    group_fields = {f.name for f in GroupDay._meta.fields} - {"id"}
    cluster_fields = {f.name for f in ClusterDay._meta.fields} - {"id"}
    with transaction.atomic():
        for day in summary["computed"]:
            GroupDay.objects.filter(cluster=day["cluster"], date=day["date"]).delete()
            ClusterDay.objects.filter(cluster=day["cluster"], date=day["date"]).delete()
        GroupDay.objects.bulk_create(
            [GroupDay(**{k: v for k, v in row.items() if k in group_fields}) for row in summary["group_daily"]],
            batch_size=1000,
        )
        ClusterDay.objects.bulk_create(
            [ClusterDay(**{k: v for k, v in row.items() if k in cluster_fields}) for row in summary["cluster_daily"]]
        )


def give_up(run_id: int, token: str, why: str) -> StatsRun:
    """End a run killed at its time limit (claims.requeue_silent): failed, its days freed, its
    spark-submit killed if it outlived its worker."""
    if not _stopped(run_id):
        return StatsRun.objects.get(pk=run_id)
    return _finish(StatsRun.objects.get(pk=run_id), failed=why, token=token)


def _stopped(run_id: int) -> bool:
    """Whether no process of the run runs any more (killed if one did): its days may be freed.
    One that did not die is left running, its days kept; the next housekeeping tries again."""
    try:
        processes.stop_recorded(StatsRun, run_id)
    except processes.StillRunning as exc:
        log.error("statistics run #%s not ended: %s", run_id, exc)
        return False
    return True


def release_abandoned() -> list[int]:
    """Fail the runs whose worker died mid-run (still running past the time limit) and free
    their days, so the next night is not refused forever."""
    limit = timezone.now() - dt.timedelta(seconds=settings.STATS_RUN_TIME_LIMIT + 300)
    abandoned = list(
        StatsRun.objects.filter(
            Q(state=StatsRun.State.RUNNING, started_at__lt=limit) | Q(state=StatsRun.State.QUEUED, created_at__lt=limit)
        )
    )
    released = []
    for run in abandoned:
        if not _stopped(run.pk):
            continue
        queued = run.state == StatsRun.State.QUEUED
        why = "never started: no worker took it" if queued else "the worker running it stopped"
        _finish(run, failed=f"no end was recorded: {why}")
        released.append(run.pk)
    return released


def prune(today: dt.date | None = None) -> dict:
    """Forget statistics older than STATS_RETENTION_DAYS: the day rows, the runs, and the
    output partitions when the output is a local directory (on a shared store its own
    lifecycle rules apply)."""
    cutoff = (today or timezone.now().date()) - dt.timedelta(days=settings.STATS_RETENTION_DAYS)
    removed = {
        "group_days": GroupDay.objects.filter(date__lt=cutoff).delete()[0],
        "cluster_days": ClusterDay.objects.filter(date__lt=cutoff).delete()[0],
        "runs": StatsRun.objects.filter(last__lt=cutoff).exclude(state=StatsRun.State.RUNNING).delete()[0],
        "partitions": 0,
    }
    output = settings.STATS_OUTPUT_URL.removeprefix("file://")
    if "://" not in output and Path(output).is_dir():
        for partition in Path(output).glob("*/cluster=*/date=*"):
            if partition.name.removeprefix("date=") < cutoff.isoformat():
                shutil.rmtree(partition, ignore_errors=True)
                removed["partitions"] += 1
    return removed


def log_text(run: StatsRun, *, attempt: int | None = None, limit: int = 200_000) -> str:
    """The log of an attempt (by default the latest)."""
    path = attempt_dir(run, attempt) / "log.txt" if attempt else Path(run.log_path) if run.log_path else None
    if path is None or not path.exists():
        return ""
    data = path.read_bytes()
    return data[-limit:].decode("utf-8", "replace")


def _finish(run: StatsRun, *, failed: str | None = None, token: str | None = None) -> StatsRun:
    """End the run (and free its days); with a token, only if the run is still that token's:
    a run taken over by another worker is that worker's to end."""
    state = StatsRun.State.FAILED if failed else StatsRun.State.SUCCEEDED
    fields = {"state": state, "error_tail": failed or "", "finished_at": timezone.now(),
              "input_rows": run.input_rows, "output_rows": run.output_rows, "log_path": run.log_path,
              "skipped": run.skipped}  # fmt: skip
    rows = StatsRun.objects.filter(pk=run.pk)
    with transaction.atomic():
        if not (rows.filter(run_token=token) if token is not None else rows).update(**fields):
            return StatsRun.objects.get(pk=run.pk)
        RunDay.objects.filter(run=run).delete()
    return StatsRun.objects.get(pk=run.pk)


def _tail(path: Path | None) -> str:
    if path is None or not path.exists():
        return ""
    lines = path.read_text(errors="replace").splitlines()
    errors = [i for i, line in enumerate(lines) if "Error" in line or "Traceback" in line]
    start = max(0, errors[0] - 2) if errors else len(lines) - ERROR_TAIL_LINES
    return "\n".join(lines[max(start, len(lines) - 4 * ERROR_TAIL_LINES) :][: 2 * ERROR_TAIL_LINES])
