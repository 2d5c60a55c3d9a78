"""Keycloak's admin REST API, asked by the console's own client what an account is now: enabled
or not, there or not, and its groups. An API token acts without a session, so no refresh token
can say it (tokens/membership.py); this can, with OIDC_KEYCLOAK_ADMIN_API on.

The console signs in as its client's service account (the client credentials grant, with
OIDC_CLIENT_ID and OIDC_CLIENT_SECRET), which needs realm-management's `view-users` role and no
other: it reads users and their groups and changes nothing. Groups are read as Keycloak's full
paths (`/payments`, `/teams/payments`), as the Group Membership mapper with full path on puts them
in the ID token, so a re-read names them as a sign-in does.
"""

from __future__ import annotations

import time
from urllib.parse import quote

import requests
from django.conf import settings
from django.utils.translation import gettext as _

from . import oidc

PAGE = 100
MAX_PAGES = 20  # 2,000 groups: more than anyone is in; a longer answer is cut, not looped on
_tokens: dict[tuple, tuple[str, float]] = {}


class AccountGone(Exception):
    """The provider has the account disabled ("disabled") or not at all ("deleted")."""

    def __init__(self, state: str):
        super().__init__(f"{state} at the identity provider")
        self.state = state


def enabled() -> bool:
    return bool(settings.OIDC_KEYCLOAK_ADMIN_API) and oidc.enabled()


def base_url() -> str:
    """https://host/realms/R (the issuer) -> https://host/admin/realms/R."""
    host, _sep, realm = settings.OIDC_ISSUER.rpartition("/realms/")
    return f"{host}/admin/realms/{realm}"


def groups_of(subject: str) -> list[str]:
    """The account's group paths now. AccountGone when it is disabled or deleted;
    oidc.SignInError (503) when the admin API cannot say."""
    path = f"/users/{quote(subject, safe='')}"
    user = _json(_get(path))
    if not isinstance(user, dict) or user.get("enabled") is not True:
        raise AccountGone("disabled")
    found: list[str] = []
    for page in range(MAX_PAGES):
        listed = _json(_get(f"{path}/groups", {"briefRepresentation": "true", "first": page * PAGE, "max": PAGE}))
        if not isinstance(listed, list):
            raise oidc.SignInError(503, _("The identity provider's admin API sent no list of groups."))
        found += [g["path"] for g in listed if isinstance(g, dict) and isinstance(g.get("path"), str)]
        if len(listed) < PAGE:
            break
    return found


def _json(answer: requests.Response):
    if answer.status_code == 404:
        raise AccountGone("deleted")
    if answer.status_code == 403:
        raise oidc.SignInError(
            503,
            _("The console's service account may not read users at the identity provider: give it view-users."),
        )
    if answer.status_code != 200:
        raise oidc.SignInError(
            503, _("The identity provider's admin API answered %(status)s.") % {"status": answer.status_code}
        )
    try:
        return answer.json()
    except ValueError as exc:
        raise oidc.SignInError(503, _("The identity provider's admin API answer is not JSON.")) from exc


def _get(path: str, params: dict | None = None) -> requests.Response:
    for attempt in range(2):
        token = _service_token(fresh=bool(attempt))
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        try:
            answer = requests.get(f"{base_url()}{path}", params=params, headers=headers, timeout=settings.OIDC_TIMEOUT)
        except requests.RequestException as exc:
            raise oidc.SignInError(503, oidc.unreachable(exc)) from exc
        if answer.status_code != 401:
            return answer
    return answer  # refused twice, a fresh token too: _json says 401


def _service_token(*, fresh: bool = False) -> str:
    """The service account's access token, kept until shortly before it expires (one per
    configuration and process)."""
    key = (settings.OIDC_ISSUER, settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET)
    token, until = _tokens.get(key, ("", 0.0))
    if token and not fresh and time.monotonic() < until:
        return token
    endpoint = oidc.metadata().get("token_endpoint")
    if not endpoint:
        raise oidc.SignInError(503, _("The identity provider names no token endpoint."))
    try:
        answer = requests.post(endpoint, data={"grant_type": "client_credentials"}, timeout=settings.OIDC_TIMEOUT,
                               auth=(settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET))  # fmt: skip
        body = answer.json() if answer.status_code == 200 else {}
    except requests.RequestException as exc:
        raise oidc.SignInError(503, oidc.unreachable(exc)) from exc
    except ValueError:
        body = {}
    if not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
        why = _("The identity provider gave the console's service account no token (%(status)s): turn it on.")
        raise oidc.SignInError(503, why % {"status": answer.status_code})
    lifetime = body.get("expires_in") if isinstance(body.get("expires_in"), int) else 60
    _tokens[key] = (body["access_token"], time.monotonic() + max(0, lifetime - 30))
    return body["access_token"]
