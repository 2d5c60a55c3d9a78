"""Change requests (the four-eyes workflow shared by offset resets and DLQ redrives; the audit
log they write is consumers/audit/).

A change request carries everything that will run: the kind, the parameters, and the plan
(for a reset, the per-queue targets computed by the preview). What an approver approves is
exactly what a worker executes. Its state only moves through `workflow.transition`, an atomic
conditional UPDATE, and every move writes an audit event.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class State(models.TextChoices):
    DRAFT = "draft"
    PENDING = "pending"
    APPROVED = "approved"
    RUNNING = "running"
    DONE = "done"
    PARTIAL = "partial"
    FAILED = "failed"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


FINAL_STATES = {State.DONE, State.PARTIAL, State.FAILED, State.REJECTED, State.EXPIRED, State.CANCELLED}


class ChangeRequest(models.Model):
    class Kind(models.TextChoices):
        RESET = "reset", _("offset reset")
        REDRIVE = "redrive", _("DLQ redrive")
        SKIP = "skip", _("message skip")
        CONFIG = "config", _("subscription config change")
        DELETE = "delete", _("group deletion")
        RESTORE = "restore", _("group restore")
        MODE = "mode", _("switch between POP and PULL")
        VERIFY = "verify", _("consumption verification")

    cluster = models.ForeignKey("consumers.Cluster", on_delete=models.PROTECT, related_name="change_requests")
    group = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # the strategy and its parameters, as the requester gave them
    params = models.JSONField(default=dict)
    # what will run, computed when the request was made (for a reset: the preview, per queue)
    plan = models.JSONField(default=dict)
    planned_at = models.DateTimeField()
    reason = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.DRAFT, db_index=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    # who approved which of the groups it touches (workflow.approve): [{by, user, groups, at}]
    approvals = models.JSONField(default=list, blank=True)
    # execution: who runs it (a token per claim), its heartbeat, and what it did
    run_token = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict)
    undo_of = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="undone_by")

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [models.Index(fields=["cluster", "group"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.get_kind_display()} of {self.group} on {self.cluster}: {self.state}"

    @property
    def silent_since(self):
        """When its worker last reported, if it went silent (consumers/jobs/claims.py)."""
        from ..jobs.claims import silent_since

        return silent_since(self) if self.state == State.RUNNING else None

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES
