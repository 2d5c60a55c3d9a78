"""Team membership read again from the identity provider while a single sign-on session lasts.

A grant names IdP groups, so a person removed from a team in the provider must lose the team's
scope in the console too, without waiting for the session to end. Every OIDC_RECHECK_SECONDS,
and before every write (any POST), the session's refresh token is exchanged at the provider's
token endpoint: the new ID token (signature, issuer, audience, expiry and subject checked) or
the userinfo endpoint says the groups now, and the user's `idp:` groups are set to them. A
provider that refuses the refresh (the session was ended there, the user disabled) ends the
console session too. A provider that cannot be reached leaves reads on the groups last known,
and refuses writes: a write is never allowed on a membership that could not be confirmed.
API tokens have no session: tokens/membership.py confirms their owners' groups. A back-channel
logout from the provider ends sessions at once, without waiting for a re-check (backchannel.py).
"""

from __future__ import annotations

import logging
import time

import requests
from authlib.integrations.base_client import OAuthError
from django.conf import settings
from django.contrib.auth import logout as auth_logout
from django.db import transaction
from django.urls import reverse
from django.utils.translation import gettext as _
from joserfc.errors import JoseError

from .. import audit
from . import accounts, oidc
from .grants import forget_scope
from .models import IdpAccount

log = logging.getLogger(__name__)
REFRESH_KEY = "oidc_refresh_token"
CHECKED_KEY = "oidc_checked_at"


class Ended(Exception):
    """The provider ended the session (or the answer cannot be trusted): sign the user out."""


def remember(request, token: dict) -> None:
    """At sign-in: what a later re-check needs."""
    if token.get("refresh_token"):
        request.session[REFRESH_KEY] = token["refresh_token"]
    request.session[CHECKED_KEY] = time.time()


def due(request) -> bool:
    if REFRESH_KEY not in request.session or not oidc.enabled():
        return False
    if request.path == reverse("logout"):
        return False  # signing out needs no membership, and works when the provider is down
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        return True  # before every write
    return time.time() - request.session.get(CHECKED_KEY, 0) >= settings.OIDC_RECHECK_SECONDS


def recheck(request) -> accounts.SignedIn:
    """Refresh at the provider and set the user's IdP groups to what it says now. Raises Ended
    (the provider refused: sign out) or oidc.SignInError (503: it could not be asked)."""
    account = IdpAccount.objects.filter(user=request.user).first()
    if account is None:
        raise Ended("no identity provider account behind this session")
    token = _refreshed(request.session[REFRESH_KEY])
    claims = _validated(token, account.subject)
    with transaction.atomic():
        found = accounts.update_groups(account, oidc.with_userinfo(token, claims), settings.OIDC_GROUPS_CLAIM)
    request.session[REFRESH_KEY] = token.get("refresh_token") or request.session[REFRESH_KEY]
    request.session[CHECKED_KEY] = time.time()
    forget_scope(request.user)
    if found.added or found.removed:
        audit.record("idp-groups-changed", username=request.user.get_username(), remote_addr=_addr(request),
                     details={"added": found.added, "removed": found.removed, "groups": found.groups})  # fmt: skip
    return found


def _refreshed(refresh_token: str) -> dict:
    endpoint = oidc.metadata().get("token_endpoint")
    if not endpoint:
        raise oidc.SignInError(503, _("The identity provider names no token endpoint."))
    try:
        answer = requests.post(
            endpoint,
            data={"grant_type": "refresh_token", "refresh_token": refresh_token},
            auth=(settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET),
            timeout=settings.OIDC_TIMEOUT,
        )
    except requests.RequestException as exc:
        raise oidc.SignInError(503, oidc.unreachable(exc)) from exc
    if answer.status_code in (400, 401):  # invalid_grant: the session is over at the provider
        raise Ended(f"the identity provider refused the refresh: {answer.text[:200]}")
    if answer.status_code != 200:
        raise oidc.SignInError(
            503, _("The identity provider answered %(status)s to a refresh.") % {"status": answer.status_code}
        )
    try:
        return answer.json()
    except ValueError as exc:
        raise oidc.SignInError(503, _("The identity provider's refresh answer is not JSON.")) from exc


def _validated(token: dict, subject: str) -> dict:
    """The new ID token's claims, checked as at sign-in but for the nonce (a refreshed ID token
    need not carry one), and about the same person."""
    if not token.get("id_token"):
        raise Ended("the refresh answer has no ID token")
    issuer = oidc.metadata()["issuer"]
    options = {
        "iss": {"essential": True, "value": issuer},
        "aud": {"essential": True, "value": settings.OIDC_CLIENT_ID},
        "sub": {"essential": True, "value": subject},
        "exp": {"essential": True},
        "iat": {"essential": True},
    }
    try:
        return dict(oidc.client().parse_id_token(token, nonce=None, claims_options=options))
    except (JoseError, OAuthError, ValueError) as exc:
        raise Ended(f"the refreshed ID token is not valid: {exc}") from exc


def _addr(request) -> str:
    return request.META.get("REMOTE_ADDR", "")


class RecheckMiddleware:
    """Runs the re-check when it is due (after authentication, before the view). Also writes
    every refused write by a signed-in user to the audit log (a 403 to a POST), so a person
    refused after losing a team leaves a trace, as does anyone probing for what they may do."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and due(request):
            refused = self._recheck(request)
            if refused is not None:
                return refused
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if request.method == "POST" and response.status_code == 403 and user is not None and user.is_authenticated:
            audit.record("write-refused", username=user.get_username(), remote_addr=_addr(request),
                         details={"path": request.path[:500], "status": 403})  # fmt: skip
        return response

    def _recheck(self, request):
        from django.shortcuts import redirect, render

        try:
            recheck(request)
        except Ended as exc:
            username = request.user.get_username()
            log.info("single sign-on session of %s ended: %s", username, exc)
            details = {"method": "oidc", "ended_by": "identity provider", "why": str(exc)[:300]}
            audit.record("logout", username=username, remote_addr=_addr(request), details=details)
            auth_logout(request)
            if request.path.startswith("/api/"):
                from ..web.errors import json_error

                return json_error(401, "your single sign-on session ended at the identity provider: sign in again")
            return redirect(f"{reverse('login')}?next={request.path}")
        except oidc.SignInError as exc:
            log.warning("team membership of %s not re-read: %s", request.user.get_username(), exc.message)
            if request.method in ("GET", "HEAD", "OPTIONS"):
                return None  # reads go on with the groups last known
            message = _("Your team membership could not be confirmed with the identity provider: %(why)s") % {
                "why": exc.message
            }
            if request.path.startswith("/api/"):
                from ..web.errors import json_error

                return json_error(503, message)
            return render(request, "consumers/bad_request.html", {"message": message}, status=503)
        return None
