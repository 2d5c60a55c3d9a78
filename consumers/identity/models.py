"""The link between a console user and the identity provider's account it was created for."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdpAccount(models.Model):
    """A user who signs in through the identity provider, found again by the provider's issuer
    and the ID token's `sub`: the one identifier OpenID Connect promises is never reassigned
    (an email address or a username may change hands, so neither is used to match)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idp_account")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    # the IdP groups of the last sign-in, normalised (the memberships of the idp: groups)
    groups = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "identity provider account"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="idp_account_unique_subject")]

    def __str__(self) -> str:
        return f"{self.user} ({self.subject} at {self.issuer})"
