"""Statistics runs and the small per-day rows the console keeps for fast pages.

The per-poll history and the hourly aggregates stay in Parquet; the database holds one row per
group and day (`GroupDay`) and per cluster and day (`ClusterDay`), replaced when a day is
recomputed, plus the record of every run. `RunDay` claims the (cluster, day) pairs a run
computes: its unique constraint is what refuses a second run over the same day on any
database, without a race between the check and the insert.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class StatsRun(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    first = models.DateField()
    last = models.DateField()
    clusters = models.JSONField(default=list)  # the cluster names computed
    trigger = models.CharField(max_length=16)  # nightly, page, command, demo
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    master = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    run_token = models.CharField(max_length=64, blank=True)  # see consumers/jobs/claims.py
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    input_rows = models.BigIntegerField(null=True, blank=True)
    output_rows = models.BigIntegerField(null=True, blank=True)
    error_tail = models.TextField(blank=True)
    # (cluster, day) pairs the job left alone, each {"cluster", "date", "why"}: no polls in the history
    skipped = models.JSONField(default=list, blank=True)
    log_path = models.CharField(max_length=500, blank=True)  # the latest attempt's
    # every run of the job is an attempt (a take-over starts it again) with its own folder and log;
    # output_attempt: the one whose rows were loaded (None: none)
    attempt = models.PositiveIntegerField(default=0)
    output_attempt = models.PositiveIntegerField(null=True, blank=True)
    # the latest attempt's spark-submit, killed by a take-over if still running (consumers/jobs/processes.py)
    process_pid = models.IntegerField(null=True, blank=True)
    process_started = models.BigIntegerField(null=True, blank=True)  # /proc/<pid>/stat start time

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        days = self.first.isoformat() if self.first == self.last else f"{self.first}..{self.last}"
        return f"statistics run #{self.pk} ({days})"

    @property
    def silent_since(self):
        """When its worker last reported, if it went silent (consumers/jobs/claims.py)."""
        from ..jobs.claims import silent_since

        return silent_since(self) if self.state == self.State.RUNNING else None

    @property
    def earlier_attempts(self) -> range:
        return range(1, self.attempt)

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class RunDay(models.Model):
    run = models.ForeignKey(StatsRun, on_delete=models.CASCADE, related_name="claimed_days")
    cluster = models.CharField(max_length=64)
    date = models.DateField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "date"], name="one_stats_run_per_day")]

    def __str__(self) -> str:
        return f"{self.cluster} {self.date} (run #{self.run_id})"


class GroupDay(models.Model):
    """One group's day, from the job's group_daily table. Null: unknown (never zero)."""

    cluster = models.CharField(max_length=64)
    date = models.DateField()
    group = models.CharField(max_length=255)
    polls = models.IntegerField()
    expected_polls = models.IntegerField()
    coverage = models.FloatField()
    consumed = models.BigIntegerField(null=True)
    produced = models.BigIntegerField(null=True)
    retries = models.BigIntegerField(null=True)
    dlq_arrivals = models.BigIntegerField(null=True)
    resets = models.IntegerField(null=True)
    incidents = models.IntegerField(null=True)
    lag_p50 = models.FloatField(null=True)
    lag_p95 = models.FloatField(null=True)
    lag_max = models.FloatField(null=True)
    lag_seconds_p50 = models.FloatField(null=True)
    lag_seconds_p95 = models.FloatField(null=True)
    lag_seconds_max = models.FloatField(null=True)
    breach_minutes = models.FloatField(null=True)
    slo_seconds = models.FloatField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "date", "group"], name="one_group_day")]
        indexes = [models.Index(fields=["cluster", "group", "date"])]
        ordering = ["cluster", "date", "group"]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.group} {self.date}"


class ClusterDay(models.Model):
    cluster = models.CharField(max_length=64)
    date = models.DateField()
    polls = models.IntegerField()
    expected_polls = models.IntegerField()
    coverage = models.FloatField()
    groups = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "date"], name="one_cluster_day")]
        ordering = ["cluster", "date"]

    def __str__(self) -> str:
        return f"{self.cluster} {self.date}"
