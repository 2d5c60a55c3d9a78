"""The link between a console user and the identity provider's account it was created for."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


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
    # when the provider last said the groups (a sign-in, a session's re-check, a token write's
    # re-check): an API token acts without a session, so its writes need this recent (tokens/membership.py)
    groups_confirmed_at = models.DateTimeField(null=True, blank=True)
    # when the provider last ended this account's sessions (a back-channel logout) or said it is
    # disabled or gone (its admin API): its tokens write again only once the groups are confirmed after it
    suspended_at = models.DateTimeField(null=True, blank=True)
    suspended_why = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = _("identity provider account")
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="idp_account_unique_subject")]

    def __str__(self) -> str:
        return f"{self.user} ({self.subject} at {self.issuer})"

    @property
    def suspended(self) -> bool:
        return self.suspended_at is not None and (
            self.groups_confirmed_at is None or self.groups_confirmed_at <= self.suspended_at
        )


class IdpSession(models.Model):
    """A console session signed in through the provider, with the provider's session id (the ID
    token's `sid`): a back-channel logout names that id, or only the account (sessions.py)."""

    account = models.ForeignKey(IdpAccount, on_delete=models.CASCADE, related_name="sessions")
    session_key = models.CharField(max_length=40, unique=True)
    sid = models.CharField(max_length=255, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # the user signed out here: the provider's back-channel logout that follows is no news
    signed_out_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"session of {self.account.user} (sid {self.sid or '?'})"


class LogoutTokenUse(models.Model):
    """The `jti` of each accepted logout token until it expires: the same token posted again is
    refused (backchannel.py), whichever process of the console receives it."""

    issuer = models.CharField(max_length=255)
    jti = models.CharField(max_length=255)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "jti"], name="logout_token_used_once")]

    def __str__(self) -> str:
        return f"logout token {self.jti} of {self.issuer}"


class Grant(models.Model):
    """A role on a scope, given to an IdP group, a local group or a user (consumers/identity/
    grants.py reads them; scope.py says what they allow). Patterns are shell-style globs,
    separated by commas or spaces."""

    class Subject(models.TextChoices):
        IDP_GROUP = "idp_group", _("identity provider group")
        GROUP = "group", _("local group")
        USER = "user", _("user")

    class Role(models.TextChoices):
        VIEWER = "viewer"
        OPERATOR = "operator"
        APPROVER = "approver"
        ADMIN = "admin"

    subject_kind = models.CharField(max_length=16, choices=Subject.choices)
    # an IdP group as the provider names it (Keycloak's /payments: payments), a local group's
    # or a user's name
    subject = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Role.choices)
    clusters = models.CharField(max_length=500, default="*", help_text=_("cluster names or globs; * for all"))
    groups = models.CharField(max_length=1000, default="*", help_text=_("consumer group globs, e.g. payments-*"))
    topics = models.CharField(
        max_length=1000,
        blank=True,
        help_text=_("topic globs for the message pages; the groups' own retry and DLQ topics are always included"),
    )
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["subject_kind", "subject", "role"]

    def __str__(self) -> str:
        return f"{self.role} on {self.clusters} / {self.groups} to {self.get_subject_kind_display()} {self.subject}"
