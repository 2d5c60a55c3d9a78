"""The console sessions of single sign-on users as the provider knows them, and their end when the
provider says so: a back-channel logout (backchannel.py), or an account the provider's admin API
finds disabled or deleted (tokens/membership.py).

Each sign-in records its session key with the provider's session id (the ID token's `sid`).
Ending deletes those sessions from the session store, so that browser's next request is signed
out whatever page it is on; it needs a store the server can delete from (the database, Django's
default, or a cache): signed-cookie sessions cannot be ended by the server. Ending also suspends
the account's token writes until the provider confirms its groups again (IdpAccount.suspended),
unless the sessions named were signed out here already: the console's own logout ends the
provider's session, which then tells the console back, and signing out must not stop one's scripts.
"""

from __future__ import annotations

import datetime as dt
import logging
from importlib import import_module

from django.conf import settings
from django.utils import timezone

from .. import audit
from .models import IdpAccount, IdpSession

log = logging.getLogger(__name__)


def record(request, user, claims: dict) -> None:
    """At sign-in (after the session key was cycled): this session and the provider's `sid`."""
    account = IdpAccount.objects.filter(user=user).first()
    if account is None:
        return
    if not request.session.session_key:
        request.session.save()
    sid = claims.get("sid")
    sid = sid if isinstance(sid, str) and len(sid) <= 255 else ""
    # sessions older than any session may live are gone from the store: their rows go too
    lived = timezone.now() - dt.timedelta(seconds=settings.SESSION_COOKIE_AGE)
    IdpSession.objects.filter(created_at__lt=lived).delete()
    IdpSession.objects.update_or_create(
        session_key=request.session.session_key, defaults={"account": account, "sid": sid, "signed_out_at": None}
    )


def signed_out(request) -> None:
    """At the console's own logout, before the session is flushed."""
    if request.session.session_key:
        IdpSession.objects.filter(session_key=request.session.session_key).update(signed_out_at=timezone.now())


def end(account: IdpAccount, *, why: str, via: str, sid: str | None = None, remote_addr: str = "") -> int | None:
    """End the account's console sessions (those of `sid`, or all of them) and suspend its token
    writes; audited as a `logout` ended by the identity provider. The number of sessions ended;
    None when the provider only echoed the console's own logout of every session it names."""
    rows = IdpSession.objects.filter(account=account)
    if sid:
        rows = rows.filter(sid=sid)
    rows = list(rows)
    live = [row for row in rows if row.signed_out_at is None]
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    ended = 0
    for row in live:
        if store.exists(row.session_key):
            store.delete(row.session_key)
            ended += 1
    IdpSession.objects.filter(pk__in=[row.pk for row in rows]).delete()
    if sid and rows and not live:
        log.info("back-channel logout of %s for sid %s: signed out here already", account.user, sid)
        return None
    account.suspended_at = timezone.now()
    account.suspended_why = why[:200]
    account.save(update_fields=["suspended_at", "suspended_why"])
    details = {"method": "oidc", "ended_by": "identity provider", "via": via, "why": why[:300], "sessions": ended}
    if sid:
        details["sid"] = sid[:255]
    audit.record("logout", username=account.user.get_username(), remote_addr=remote_addr, details=details)
    log.info("sessions of %s ended by the identity provider (%s): %s", account.user, via, why)
    return ended
