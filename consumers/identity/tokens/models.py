"""Per-user API tokens for scripts: `Authorization: Bearer <token>`.

Only a SHA-256 of the token is stored (a token is 256 random bits, so a plain hash is enough:
there is nothing to guess that a slow hash would protect); the short prefix finds the row and
is shown in lists so users can tell their tokens apart.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)  # hex SHA-256 of the whole token
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_from = models.CharField(max_length=64, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # a narrower scope than its owner's (identity/scope.py): a role and patterns; both the
    # owner's grants and these must allow. No role: the token acts with all of its owner's.
    role = models.CharField(max_length=16, blank=True)
    clusters = models.CharField(max_length=500, default="*")
    groups = models.CharField(max_length=1000, default="*")
    topics = models.CharField(max_length=1000, blank=True)

    class Meta:
        app_label = "consumers"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    @property
    def scope_text(self) -> str:
        if not self.role:
            return "all of its owner's"
        topics = f", topics {self.topics}" if self.topics else ""
        return f"{self.role} on {self.clusters} / {self.groups}{topics}"

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"


class TokenFailure(models.Model):
    """Refused tokens counted per (token prefix, address): see consumers/identity/tokens/throttle.py."""

    prefix = models.CharField(max_length=16)  # "?" for prefixes no token has
    address = models.CharField(max_length=64)
    failures = models.PositiveIntegerField(default=0)
    last_failure_at = models.DateTimeField()

    class Meta:
        app_label = "consumers"
        constraints = [models.UniqueConstraint(fields=["prefix", "address"], name="token_failure_once")]

    def __str__(self) -> str:
        return f"{self.failures} refused token(s) {self.prefix}… from {self.address}"
