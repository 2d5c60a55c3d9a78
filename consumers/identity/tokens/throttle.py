"""Refused Bearer tokens, counted apart from password logins.

A refused token is counted for the pair (the prefix it named, the address it came from), never
in django-axes's tables: axes counts every failure from an address against password logins
too, so one cron job with a revoked token behind an office's NAT locked the whole office out of
the login page. Why the pair, and not the prefix alone or the address alone:
- the prefix alone: prefixes are not secret (lists and the audit log show them), so anyone
  could lock someone's script out by sending a few wrong tokens with its prefix;
- the address alone: every script behind one NAT would share the lockout.
Prefixes that no token has are one bucket per address ("?"), so a guesser cannot get a fresh
count by making up prefixes. A token is 256 random bits: this throttle is against load and
noise, not against guessing, which no throttle is needed for.

AXES_FAILURE_LIMIT refusals within AXES_COOLOFF_TIME lock the pair for AXES_COOLOFF_TIME after
the last one; a locked pair is answered 429 before the token is looked at (a good token then
tells the sender nothing). A token accepted clears its pair. Unlock sooner: delete the row
(admin: Token failures) or wait.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ... import audit
from .models import ApiToken, TokenFailure

UNKNOWN = "?"
AUDIT_ACTION = "api-token-locked-out"


def bucket(prefix: str) -> str:
    """The prefix as counted: itself when a token has it, UNKNOWN otherwise."""
    return prefix if prefix and ApiToken.objects.filter(prefix=prefix).exists() else UNKNOWN


def _cool_off() -> dt.timedelta:
    return settings.AXES_COOLOFF_TIME or dt.timedelta(days=3650)  # none: until deleted


def counted(prefix: str, address: str) -> TokenFailure | None:
    """The pair's count of refusals, if any (None also when throttling is off)."""
    if not settings.AXES_ENABLED:
        return None
    return TokenFailure.objects.filter(prefix=prefix, address=address).first()


def locked_for(row: TokenFailure | None) -> dt.timedelta | None:
    """How much longer the pair `row` counts stays locked, or None when it is not."""
    if row is None or row.failures < settings.AXES_FAILURE_LIMIT:
        return None
    left = row.last_failure_at + _cool_off() - timezone.now()
    return left if left > dt.timedelta(0) else None


def record_failure(prefix: str, address: str) -> int:
    """Count one refusal; the pair's count within the cool-off. Audited once, at the limit."""
    if not settings.AXES_ENABLED:
        return 0
    now = timezone.now()
    with transaction.atomic():
        row, _ = TokenFailure.objects.select_for_update().get_or_create(
            prefix=prefix, address=address, defaults={"last_failure_at": now}
        )
        # a count older than the cool-off starts again at one
        failures = row.failures + 1 if row.last_failure_at > now - _cool_off() else 1
        TokenFailure.objects.filter(pk=row.pk).update(failures=failures, last_failure_at=now)
    if failures == settings.AXES_FAILURE_LIMIT:
        audit.record(
            AUDIT_ACTION,
            username="",
            remote_addr=address,
            details={"token": prefix, "failures": failures, "cooloff_seconds": int(_cool_off().total_seconds())},
        )
    return failures


def clear(prefix: str, address: str) -> None:
    TokenFailure.objects.filter(prefix=prefix, address=address).delete()
