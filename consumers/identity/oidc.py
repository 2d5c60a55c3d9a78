"""Single sign-on with OpenID Connect, through Authlib (pinned in requirements.txt): the
authorization code flow with PKCE (S256), `state` and `nonce` kept in the session, the ID
token's signature checked against the provider's JWKS (cached; fetched again for an unknown
`kid`, i.e. after the provider rotates its keys) and its iss, aud, azp, exp, iat and nonce
checked; RP-initiated logout at the provider's end_session_endpoint. Endpoints and keys come from
{OIDC_ISSUER}/.well-known/openid-configuration, read once per process.

Every way a sign-in can fail is a SignInError carrying the HTTP status and the words the page
shows: 400 for a callback that does not belong to this session or whose token does not
validate, 403 when the provider refused the user, 503 when the provider cannot be reached.
"""

from __future__ import annotations

import logging

import requests
from authlib.integrations.base_client import MismatchingStateError, OAuthError
from authlib.integrations.django_client import OAuth
from django.conf import settings
from django.utils.translation import gettext as _
from joserfc.errors import ClaimError, JoseError

from .claims import claim

log = logging.getLogger(__name__)
NAME = "idp"
_clients: dict[tuple, object] = {}


class SignInError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def client():
    """The Authlib client for the current settings (one per configuration and process: it
    holds the discovery document and the provider's keys)."""
    key = (settings.OIDC_ISSUER, settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET,
           tuple(settings.OIDC_SCOPES), settings.OIDC_TIMEOUT)  # fmt: skip
    if key not in _clients:
        oauth = OAuth()
        _clients[key] = oauth.register(
            NAME,
            client_id=settings.OIDC_CLIENT_ID,
            client_secret=settings.OIDC_CLIENT_SECRET,
            server_metadata_url=f"{settings.OIDC_ISSUER}/.well-known/openid-configuration",
            client_kwargs={
                "scope": " ".join(settings.OIDC_SCOPES),
                "code_challenge_method": "S256",
                "default_timeout": settings.OIDC_TIMEOUT,
            },
        )
    return _clients[key]


def metadata() -> dict:
    """The provider's discovery document; it must name the configured issuer (OpenID Connect
    Discovery 4.3), or tokens would be checked against an issuer nobody configured."""
    try:
        found = client().load_server_metadata()
    except (requests.RequestException, ValueError) as exc:
        raise SignInError(
            503,
            _("The identity provider at %(issuer)s cannot be reached (%(error)s).")
            % {"issuer": settings.OIDC_ISSUER, "error": exc},
        ) from exc
    if str(found.get("issuer", "")).rstrip("/") != settings.OIDC_ISSUER:
        raise SignInError(
            503, _("The identity provider calls itself %(issuer)r, not OIDC_ISSUER.") % {"issuer": found.get("issuer")}
        )
    return found


def authorization_redirect(request, redirect_uri: str):
    """The redirect to the provider's login page; state, nonce and the PKCE verifier are kept
    in the session until the callback."""
    metadata()
    try:
        return client().authorize_redirect(request, redirect_uri)
    except requests.RequestException as exc:
        raise SignInError(503, unreachable(exc)) from exc


def unreachable(exc: Exception) -> str:
    return _("The identity provider cannot be reached (%(error)s).") % {"error": exc}


def complete(request) -> tuple[dict, dict]:
    """The callback's work: (the token response, the ID token's validated claims)."""
    error = request.GET.get("error")
    if error:
        description = request.GET.get("error_description", "")
        status = 403 if error == "access_denied" else 400
        why = f"{error} {description}".strip()
        raise SignInError(status, _("The identity provider did not sign you in: %(why)s") % {"why": why})
    if not request.GET.get("state") or not request.GET.get("code"):
        raise SignInError(400, _("This sign-in answer lacks its state or code: start again from the login page."))
    issuer = metadata()["issuer"]
    # RFC 9207: a provider that names itself in the answer must be ours (a mix-up attack otherwise)
    if request.GET.get("iss") not in (None, issuer):
        raise SignInError(400, _("This sign-in answer comes from another identity provider."))
    try:
        token = client().authorize_access_token(request, claims_options=_claims_options(issuer))
    except MismatchingStateError as exc:
        raise SignInError(
            400,
            _(
                "This sign-in answer does not belong to this browser session: it was used already, it is "
                "too old, or it was started elsewhere. Start again from the login page."
            ),
        ) from exc
    except OAuthError as exc:
        why = f"{exc.error} {exc.description or ''}".strip()
        raise SignInError(400, _("The identity provider refused the sign-in code: %(why)s") % {"why": why}) from exc
    except JoseError as exc:
        what = f"{exc.error}: {exc.claim}" if isinstance(exc, ClaimError) else exc.error
        raise SignInError(400, _("The identity provider's ID token is not valid (%(what)s).") % {"what": what}) from exc
    except requests.RequestException as exc:
        raise SignInError(503, unreachable(exc)) from exc
    claims = token.get("userinfo")
    if not token.get("id_token") or not claims:
        raise SignInError(400, _("The identity provider sent no ID token."))
    return token, dict(claims)


def _claims_options(issuer: str) -> dict:
    """What the ID token must hold. Authlib checks the signature, exp, iat, the nonce against the
    session's and azp by itself; the audience only if asked: this client among its audiences."""
    return {
        "iss": {"essential": True, "value": issuer},
        "aud": {"essential": True, "value": settings.OIDC_CLIENT_ID},
        "sub": {"essential": True},
        "exp": {"essential": True},
        "iat": {"essential": True},
        "nonce": {"essential": True},
    }


def with_userinfo(token: dict, claims: dict) -> dict:
    """The ID token's claims, plus the userinfo endpoint's when the ID token lacks the groups
    claim (some providers send groups there only). The ID token's own claims are kept as they
    are; userinfo about another subject is ignored."""
    if claim(claims, settings.OIDC_GROUPS_CLAIM) is not None or not metadata().get("userinfo_endpoint"):
        return claims
    try:
        info = dict(client().userinfo(token=token))
    except (requests.RequestException, OAuthError, ValueError) as exc:
        log.warning("userinfo of %s not read: %s", claims.get("sub"), exc)
        return claims
    if info.get("sub") != claims.get("sub"):
        return claims
    return {**info, **claims}


def logout_url(id_token: str, post_logout_redirect_uri: str) -> str | None:
    """The provider's end_session_endpoint for RP-initiated logout (None: it has none, or
    cannot be reached)."""
    try:
        endpoint = metadata().get("end_session_endpoint")
    except SignInError as exc:
        log.warning("no RP-initiated logout: %s", exc.message)
        return None
    if not endpoint:
        return None
    return client().create_logout_url(
        post_logout_redirect_uri=post_logout_redirect_uri, id_token_hint=id_token, client_id=settings.OIDC_CLIENT_ID
    )["url"]
