"""Redrive jobs and the record of every message they moved.

A job reads a group's dead-letter queue (%DLQ%<group>, one queue on each broker that holds
it) from a checkpoint per source queue and sends the selected messages to a target, at a
rate. `RedrivenMessage` rows say, for each source message, which job sent it, when and where:
the DLQ page shows them, and a resumed job trusts them (see runner.py on exactly-once).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


class RedriveJob(models.Model):
    class State(models.TextChoices):
        AWAITING_APPROVAL = "awaiting-approval"
        QUEUED = "queued"
        RUNNING = "running"
        PAUSED = "paused"
        CANCELLED = "cancelled"
        DONE = "done"
        PARTIAL = "partial"  # every readable source sent; brokers unreadable at planning left out (`untouched`)
        FAILED = "failed"
        REJECTED = "rejected"

    class Target(models.TextChoices):
        GROUP = "group", _("back to this group only (its retry topic)")
        ORIGINAL = "original", _("the original topic (every subscribing group)")
        TOPIC = "topic", _("another topic")

    cluster = models.ForeignKey("consumers.Cluster", on_delete=models.PROTECT, related_name="redrive_jobs")
    group = models.CharField(max_length=255)
    selection = models.JSONField(default=dict)  # the filter (time range, key, tag, ids, ...)
    target = models.CharField(max_length=16, choices=Target.choices)
    target_topic = models.CharField(max_length=255, blank=True)
    rate = models.PositiveIntegerField(help_text=_("messages per second"))
    state = models.CharField(max_length=24, choices=State.choices, db_index=True)
    total = models.PositiveIntegerField(default=0)  # selected messages, counted when planned
    # per source queue ("broker#queue"): the end offset of the selection, and how far the job got
    bounds = models.JSONField(default=dict)
    checkpoints = models.JSONField(default=dict)
    moved = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list)  # the latest failures, with reasons
    # sent before a worker died, found on the target by a take-over and recorded, not sent again
    recovered = models.PositiveIntegerField(default=0)
    # DLQ brokers unreadable when planned, left out with the requester's or approver's consent
    untouched = models.JSONField(default=list)
    change_request = models.OneToOneField(
        "consumers.ChangeRequest", on_delete=models.PROTECT, null=True, blank=True, related_name="redrive_job"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    run_token = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["cluster", "group", "state"])]

    def __str__(self) -> str:
        return f"redrive #{self.pk} of %DLQ%{self.group} on {self.cluster}: {self.state}"

    @property
    def shown_state(self) -> str:
        """The state as it is on the broker: a job paused or cancelled while its worker still
        sends the windows in flight is "pausing" or "cancelling" until that worker lets go
        (it clears run_token) or falls silent; then "paused" or "cancelled"."""
        from ..jobs.claims import stale_before

        stopping = {self.State.PAUSED: "pausing", self.State.CANCELLED: "cancelling"}.get(self.state)
        if stopping and self.run_token and self.heartbeat_at and self.heartbeat_at >= stale_before():
            return stopping
        return self.state

    @property
    def target_description(self) -> str:
        if self.target == self.Target.GROUP:
            return gettext("%(topic)s (this group only)") % {"topic": f"%RETRY%{self.group}"}
        if self.target == self.Target.ORIGINAL:
            return gettext("the original topic of each message (every subscribing group)")
        return self.target_topic


class RedrivenMessage(models.Model):
    job = models.ForeignKey(RedriveJob, on_delete=models.PROTECT, related_name="messages")
    cluster = models.ForeignKey("consumers.Cluster", on_delete=models.PROTECT, related_name="+")
    group = models.CharField(max_length=255)
    source = models.CharField(max_length=255)  # broker#queue of the DLQ
    source_offset = models.BigIntegerField()
    msg_id = models.CharField(max_length=128)
    original_msg_id = models.CharField(max_length=128, blank=True)
    target_topic = models.CharField(max_length=255)
    sent_msg_id = models.CharField(max_length=128)
    sent_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "source", "source_offset"], name="one_send_per_message_per_job")
        ]
        indexes = [
            models.Index(fields=["cluster", "group", "source", "source_offset"]),
            models.Index(fields=["job", "sent_at"], name="redriven_by_job_and_time"),  # the last 10 s's rate
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.source_offset} -> {self.target_topic} by job #{self.job_id}"
