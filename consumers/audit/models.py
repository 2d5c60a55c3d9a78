"""The audit log's rows: events chained by hash, and the head of the chain (append-only: the
model and its queryset refuse updates and deletes)."""

from __future__ import annotations

from django.db import models


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise PermissionError("the audit log is append-only")

    def delete(self):
        raise PermissionError("the audit log is append-only")


class AuditEvent(models.Model):
    """One thing that happened, chained to the event before it by a SHA-256 hash, so an edit
    made in the database behind the application's back is detected (manage.py verify_audit)."""

    at = models.DateTimeField(db_index=True)
    username = models.CharField(max_length=150)
    remote_addr = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=32, db_index=True)
    cluster = models.CharField(max_length=64, blank=True, db_index=True)
    group = models.CharField(max_length=255, blank=True, db_index=True)
    change_request = models.ForeignKey(
        "consumers.ChangeRequest", on_delete=models.PROTECT, null=True, blank=True, related_name="events"
    )
    details = models.JSONField(default=dict)
    previous_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.cluster}/{self.group}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("the audit log is append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("the audit log is append-only")


class AuditHead(models.Model):
    """The newest hash of the chain, one row: appending locks it, so appends are serialised on
    PostgreSQL (row lock) and SQLite (the write lock taken by the first UPDATE)."""

    count = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64, default="0" * 64)

    def __str__(self) -> str:
        return f"audit head after {self.count} events"
