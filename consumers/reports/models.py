"""Saved lag reports: what was asked, how far the building got, and the files it produced.

A report's numbers come from the nightly statistics (GroupDay rows for daily reports, the
job's group_hourly Parquet for hourly ones); "report now" is built from the live snapshot and
streamed, never saved. Files live under REPORT_DIR/<id>/ and are deleted with the row when the
report expires (REPORT_RETENTION_DAYS).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Report(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        READY = "ready"
        FAILED = "failed"

    class Granularity(models.TextChoices):
        DAILY = "daily", _("Daily")
        HOURLY = "hourly", _("Hourly")

    FORMATS = ("csv", "xlsx", "pdf")

    title = models.CharField(max_length=200)
    clusters = models.JSONField(default=list)
    group_filter = models.CharField(max_length=255, blank=True, help_text=_("groups whose name contains this"))
    # the scope of whoever asked for it (identity.scope.to_wire): its rows are the groups they
    # see; null: every group (an unscoped user's or a scheduled report)
    scope = models.JSONField(null=True, blank=True)
    first = models.DateField()
    last = models.DateField()
    granularity = models.CharField(max_length=8, choices=Granularity.choices, default=Granularity.DAILY)
    formats = models.JSONField(default=list)
    trigger = models.CharField(max_length=16, default="page")  # page, scheduled
    # the language of its title and files (a code of LANGUAGES; services.request_report says
    # which); empty (reports made before there was a choice): the site default when built
    language = models.CharField(max_length=16, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    stage = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    run_token = models.CharField(max_length=64, blank=True)  # see consumers/jobs/claims.py
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()
    files = models.JSONField(default=dict)  # format -> file name under REPORT_DIR/<id>/
    groups = models.PositiveIntegerField(null=True, blank=True)
    rows = models.PositiveIntegerField(null=True, blank=True)
    coverage = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    # every build is an attempt (a take-over starts it again) with its own work folder;
    # files_attempt: the one that wrote the files (None: none)
    attempt = models.PositiveIntegerField(default=0)
    files_attempt = models.PositiveIntegerField(null=True, blank=True)
    # the latest attempt's chromium, killed by a take-over if still running (consumers/jobs/processes.py)
    process_pid = models.IntegerField(null=True, blank=True)
    process_started = models.BigIntegerField(null=True, blank=True)  # /proc/<pid>/stat start time

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"report #{self.pk}: {self.title}"

    @property
    def silent_since(self):
        """When its worker last reported, if it went silent (consumers/jobs/claims.py)."""
        from ..jobs.claims import silent_since

        return silent_since(self) if self.state == self.State.RUNNING else None
