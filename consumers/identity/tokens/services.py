"""Creating, revoking and checking API tokens; every change is audited."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets

from django.utils import timezone
from django.utils.translation import gettext as _

from ... import audit
from ..grants import PatternError, rule_of, scope_of
from ..scope import Rule
from .models import ApiToken

PREFIX = "rmqc_"
# a request may update last_used_at at most this often per token (one write, not one per call)
LAST_USED_RESOLUTION = dt.timedelta(seconds=60)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenRefused(ValueError):
    pass


def create(
    user, *, name: str, days: int | None, remote_addr: str = "", rule: Rule | None = None
) -> tuple[ApiToken, str]:
    """A new token, with all of the owner's rights or (`rule`) a narrower role and scope,
    refused when it is wider than theirs; the secret is returned once and never stored."""
    if rule is not None and not scope_of(user).covers(rule):
        where = {"role": rule.role, "clusters": ", ".join(rule.clusters), "groups": ", ".join(rule.groups)}
        if rule.topics:
            raise TokenRefused(
                _(
                    "a token cannot have more than you: you hold no %(role)s grant covering clusters %(clusters)s, "
                    "groups %(groups)s, topics %(topics)s"
                )
                % {**where, "topics": ", ".join(rule.topics)}
            )
        raise TokenRefused(
            _(
                "a token cannot have more than you: you hold no %(role)s grant covering clusters %(clusters)s, "
                "groups %(groups)s"
            )
            % where
        )
    prefix = secrets.token_hex(4)
    secret = f"{PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    expires = timezone.now() + dt.timedelta(days=days) if days else None
    scoped = {}
    if rule is not None:
        scoped = {"role": rule.role, "clusters": " ".join(rule.clusters), "groups": " ".join(rule.groups),
                  "topics": " ".join(rule.topics)}  # fmt: skip
    token = ApiToken.objects.create(
        user=user, name=name, prefix=prefix, digest=_digest(secret), expires_at=expires, **scoped
    )
    details = {"token": prefix, "name": name, "expires_at": expires.isoformat() if expires else None,
               "scope": token.scope_text}  # fmt: skip
    audit.record("api-token-create", username=user.get_username(), remote_addr=remote_addr, details=details)
    return token, secret


def revoke(user, token_id: int, *, remote_addr: str = "") -> ApiToken | None:
    """Revoke one of the user's own tokens (None: no such token of theirs)."""
    token = ApiToken.objects.filter(user=user, pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        return None
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    audit.record("api-token-revoke", username=user.get_username(), remote_addr=remote_addr,
                 details={"token": token.prefix, "name": token.name})  # fmt: skip
    return token


def prefix_of(secret: str) -> str:
    """The prefix a presented token names ("" when it is not shaped like one of ours)."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return ""
    return secret[len(PREFIX) :].partition("_")[0][:16]


def user_for(secret: str, *, remote_addr: str = ""):
    """The active user a presented token belongs to, or None."""
    prefix = prefix_of(secret)
    if not prefix:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
    if token is None or not hmac.compare_digest(token.digest, _digest(secret)):
        return None
    if token.state != "active" or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now, last_used_from=remote_addr[:64])
    user = token.user
    if token.role:  # the token's own scope: identity's scope_of applies it over the owner's
        try:
            user._console_token_rule = rule_of(token)
        except PatternError:  # checked when it was made: a token that says nothing clear is refused
            return None
    return user


def tokens_of(user) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user))
