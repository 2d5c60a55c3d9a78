"""OpenID Connect Back-Channel Logout 1.0: when a user's session at the provider ends (signed out
there or in another application of the realm, ended by an administrator), the provider posts a
logout token, a JWT it signed, to /oidc/backchannel-logout/ (the client's back-channel logout URL).

The token is checked as the specification asks (its section 2.6): the signature against the
provider's keys as for ID tokens (oidc.py's client: its JWKS, fetched again for an unknown `kid`;
never `none` or a shared-secret algorithm), `iss`, `aud` (this client), `iat` (and `exp` when
present), the back-channel logout member in `events`, a `sub` or a `sid` or both, no `nonce` (an
ID token posted here is refused) and a `jti` not seen before within the token's lifetime. Then
the console sessions it names end at once, and the account's token writes wait until the
provider confirms its groups again (sessions.py). The answer is 200, or 400 with the reason for a
token that does not validate, or 503 when the provider's keys cannot be fetched: never a 500.
"""

from __future__ import annotations

import datetime as dt
import logging
import time

import requests
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import IntegrityError, transaction
from django.http import Http404, HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from . import oidc, sessions
from .access import remote_addr
from .models import IdpAccount, IdpSession, LogoutTokenUse

log = logging.getLogger(__name__)
EVENT = "http://schemas.openid.net/event/backchannel-logout"
LEEWAY = 60  # seconds of clock difference allowed with the provider
MAX_AGE = 300  # a token without `exp` is accepted this long after its `iat` (Keycloak's live 120 s)
MAX_LIFETIME = 3600  # a longer-lived one would have to be remembered as long to refuse its replay
MAX_LENGTH = 16_384  # a logout token is well under 2 KB


class Refused(ValueError):
    """The logout token does not validate (400)."""


@login_not_required
@csrf_exempt  # posted by the provider's server, not by a browser: the token's signature is the check
@require_POST
def backchannel_logout(request):
    if not oidc.enabled():
        raise Http404(_("single sign-on is not configured"))
    try:
        claims = validate(request.POST.get("logout_token", ""))
    except Refused as exc:
        log.warning("back-channel logout refused from %s: %s", remote_addr(request), exc)
        return _no_store(JsonResponse({"error": "invalid_request", "error_description": str(exc)}, status=400))
    except oidc.SignInError as exc:
        log.warning("back-channel logout not checked: %s", exc.message)
        return _no_store(JsonResponse({"error": "temporarily_unavailable", "error_description": exc.message},
                                      status=503))  # fmt: skip
    ended = end_sessions(claims, remote_addr(request))
    log.info("back-channel logout of sub %s sid %s: %s session(s) ended", claims.get("sub"), claims.get("sid"), ended)
    return _no_store(HttpResponse(status=200))


def _no_store(response):
    response["Cache-Control"] = "no-store"
    return response


def validate(token: str) -> dict:
    """The logout token's claims, or Refused (oidc.SignInError: the provider's keys could not be read)."""
    if not isinstance(token, str) or not token or len(token) > MAX_LENGTH:
        raise Refused("no logout_token in the form, or one too long")
    metadata = oidc.metadata()
    claims = _verified(token, metadata)
    registry = jwt.JWTClaimsRegistry(
        leeway=LEEWAY,
        iss={"essential": True, "value": metadata["issuer"]},
        aud={"essential": True, "value": settings.OIDC_CLIENT_ID},
        iat={"essential": True},
        jti={"essential": True},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise Refused(f"{exc.error}: {exc.description or ''}".strip(": ")) from exc
    events = claims.get("events")
    if not isinstance(events, dict) or not isinstance(events.get(EVENT), dict):
        raise Refused(f"the events claim has no {EVENT} member")
    if "nonce" in claims:
        raise Refused("a logout token carries no nonce")
    sub, sid = claims.get("sub"), claims.get("sid")
    if not (isinstance(sub, str) and sub) and not (isinstance(sid, str) and sid):
        raise Refused("neither sub nor sid")
    if sid is not None and not isinstance(sid, str):
        raise Refused("sid is not a string")
    _used_once(metadata["issuer"], claims)
    return claims


def _verified(token: str, metadata: dict) -> dict:
    """The payload once the signature is checked against the provider's keys."""
    offered = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = [a for a in offered if isinstance(a, str) and a != "none" and not a.startswith("HS")]
    registry = JWSRegistry(algorithms=algorithms, strict_check_header=False)
    try:
        try:
            keys = KeySet.import_key_set(oidc.client().fetch_jwk_set())
            decoded = jwt.decode(token, keys, registry=registry)
        except InvalidKeyIdError:  # the provider rotated its keys since they were read
            keys = KeySet.import_key_set(oidc.client().fetch_jwk_set(force=True))
            decoded = jwt.decode(token, keys, registry=registry)
    except (requests.RequestException, RuntimeError) as exc:
        raise oidc.SignInError(503, oidc.unreachable(exc)) from exc
    except JoseError as exc:
        raise Refused(f"the token does not verify ({exc.error})") from exc
    except (ValueError, TypeError) as exc:
        raise Refused(f"not a signed JWT ({exc})") from exc
    if not isinstance(decoded.claims, dict):
        raise Refused("the payload is not a JSON object")
    return dict(decoded.claims)


def _used_once(issuer: str, claims: dict) -> None:
    """Refused when this `jti` was accepted already; it is kept until the token expires."""
    now = time.time()
    exp = claims.get("exp")  # both numbers: the claims registry checked them
    until = float(exp) if exp is not None else float(claims["iat"]) + MAX_AGE
    if until < now - LEEWAY:
        raise Refused("the token is too old")
    if until > now + MAX_LIFETIME:
        raise Refused("the token expires too far ahead to be a logout token")
    LogoutTokenUse.objects.filter(expires_at__lt=timezone.now()).delete()
    try:
        with transaction.atomic():
            LogoutTokenUse.objects.create(issuer=issuer, jti=claims["jti"][:255],
                                          expires_at=dt.datetime.fromtimestamp(until + LEEWAY, dt.UTC))  # fmt: skip
    except IntegrityError as exc:
        raise Refused("this logout token was used already (jti)") from exc


def end_sessions(claims: dict, address: str) -> int:
    """End what the token names: with `sub`, that account's sessions (those of `sid`, if it is
    given too); with only `sid`, the sessions of that provider session, whoever's they are."""
    issuer, sub, sid = oidc.metadata()["issuer"], claims.get("sub"), claims.get("sid") or None
    if sub:
        accounts = IdpAccount.objects.select_related("user").filter(issuer=issuer, subject=sub)
    else:
        owners = IdpSession.objects.filter(sid=sid).values("account")
        accounts = IdpAccount.objects.select_related("user").filter(issuer=issuer, pk__in=owners)
    why = "back-channel logout" + (f" of session {sid}" if sid else " of every session")
    return sum(sessions.end(account, why=why, via="back-channel logout", sid=sid, remote_addr=address) or 0
               for account in accounts)  # fmt: skip
