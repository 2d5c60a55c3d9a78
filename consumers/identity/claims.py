"""What the console reads from an ID token's claims: the user's profile, a username for new
users, and the IdP groups. Pure functions, no database.

IdP groups become Django groups named `idp:<group>`: a namespace of their own, replaced at each
sign-in, apart from the local groups (the roles viewer, operator, approver, admin, and any an
admin creates), which a sign-in never touches. Keycloak sends group paths (`/payments`, nested
`/teams/payments`): the leading slash goes, the path stays (`payments`, `teams/payments`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

IDP_GROUP_PREFIX = "idp:"
GROUP_NAME_MAX = 150  # django.contrib.auth's Group.name
USERNAME_MAX = 150


def claim(claims: dict, name: str):
    """The claim `name`, or a nested one written with dots (realm_access.roles) when no claim
    has that exact name (some providers name claims with URLs, dots included)."""
    if name in claims:
        return claims[name]
    value = claims
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def normalise_group(value) -> str | None:
    """One IdP group as the console names it (without the prefix); None for what is no group."""
    if not isinstance(value, str):
        return None
    name = "/".join(part.strip() for part in value.strip().split("/") if part.strip())
    if not name or len(IDP_GROUP_PREFIX) + len(name) > GROUP_NAME_MAX:
        return None
    return name


def idp_groups(claims: dict, groups_claim: str) -> list[str]:
    """The user's IdP groups, sorted and without duplicates. A missing claim is no groups: a
    user whose groups the provider stopped sending loses them, never keeps them."""
    value = claim(claims, groups_claim)
    if isinstance(value, str):  # one group as a plain string
        value = [value]
    if not isinstance(value, Iterable) or isinstance(value, dict):
        return []
    return sorted({name for name in map(normalise_group, value) if name})


def group_name(idp_group: str) -> str:
    return IDP_GROUP_PREFIX + idp_group


def is_idp_group(name: str) -> bool:
    return name.startswith(IDP_GROUP_PREFIX)


def profile(claims: dict) -> dict[str, str]:
    """first_name, last_name and email for the user model (cut to its lengths)."""

    def text(name: str, limit: int) -> str:
        value = claims.get(name)
        return value.strip()[:limit] if isinstance(value, str) else ""

    return {"first_name": text("given_name", 150), "last_name": text("family_name", 150), "email": text("email", 254)}


def preferred_username(claims: dict) -> str:
    """The username a new user would like: preferred_username, else the email, else sub."""
    for name in ("preferred_username", "email", "sub"):
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()[:USERNAME_MAX]
    return ""


def fallback_username(wanted: str, issuer: str, subject: str) -> str:
    """The username when `wanted` belongs to someone else (a local account, or another subject):
    the same name with a suffix from issuer and subject, so it stays the same at every sign-in."""
    suffix = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()[:8]
    return f"{wanted[: USERNAME_MAX - 9]}-{suffix}"
