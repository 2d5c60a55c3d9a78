"""Whether an API token of a single sign-on user may write now. A token acts without a session,
so no refresh token reads its owner's groups again (recheck.py does that for sessions): a person
removed from a team, disabled or deleted in the provider would keep the team's writes through it.

- With OIDC_KEYCLOAK_ADMIN_API: a token write whose owner's groups were confirmed by the provider
  more than OIDC_RECHECK_SECONDS ago, or not since a back-channel logout, asks Keycloak's admin
  API first (keycloak_admin.py). Disabled or deleted: refused (403), the owner's console sessions
  ended and their token writes suspended; groups changed: the new groups apply to this write;
  the provider cannot be asked: refused (503) with the reason, never written on old groups.
- Without it (another provider): the console cannot ask, so a token writes only while the
  groups were confirmed (a sign-in, a session's re-check) less than OIDC_TOKEN_MEMBERSHIP_MAX_AGE
  ago and not suspended by a back-channel logout since.

Reads go on with the groups last known. Local accounts' groups live in the console: no check.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ... import audit
from .. import accounts, keycloak_admin, lockout, oidc, sessions
from ..grants import forget_scope
from ..models import IdpAccount

log = logging.getLogger(__name__)


def write_refused(request) -> tuple[int, str] | None:
    """(status, why) when the token's owner may not write now; None: they may."""
    account = IdpAccount.objects.select_related("user").filter(user=request.user).first()
    if account is None:
        return None
    if keycloak_admin.enabled() and account.issuer.rstrip("/") == settings.OIDC_ISSUER:
        return _asked(request, account)
    return _bounded(account)


def _asked(request, account: IdpAccount) -> tuple[int, str] | None:
    confirmed = account.groups_confirmed_at
    recent = dt.timedelta(seconds=settings.OIDC_RECHECK_SECONDS)
    if confirmed is not None and not account.suspended and timezone.now() - confirmed < recent:
        return None
    address = request.META.get("REMOTE_ADDR", "")
    try:
        paths = keycloak_admin.groups_of(account.subject)
    except keycloak_admin.AccountGone as gone:
        if not (account.suspended and account.suspended_why == str(gone)):  # ended once, not at every write
            sessions.end(account, why=str(gone), via="admin API", remote_addr=address)
        if gone.state == "deleted":
            return 403, _("Your account no longer exists at the identity provider: this token does not write.")
        return 403, _("Your account is disabled at the identity provider: this token does not write.")
    except oidc.SignInError as exc:
        log.warning("team membership of %s not read for a token write: %s", account.user, exc.message)
        return 503, _("Your team membership could not be confirmed with the identity provider: %(why)s") % {
            "why": exc.message
        }
    with transaction.atomic():
        found = accounts.update_groups(account, {"groups": paths}, "groups")
    forget_scope(request.user)
    if found.added or found.removed:
        audit.record("idp-groups-changed", username=account.user.get_username(), remote_addr=address,
                     details={"added": found.added, "removed": found.removed, "groups": found.groups,
                              "via": "api token"})  # fmt: skip
    return None


def _bounded(account: IdpAccount) -> tuple[int, str] | None:
    if account.suspended:
        return 403, _(
            "The identity provider ended your sessions at %(when)s UTC (%(why)s): sign in to the console once, "
            "then this token writes again."
        ) % {"when": f"{account.suspended_at:%Y-%m-%d %H:%M}", "why": account.suspended_why}
    confirmed = account.groups_confirmed_at or account.last_sign_in
    bound = dt.timedelta(seconds=settings.OIDC_TOKEN_MEMBERSHIP_MAX_AGE)
    if confirmed is not None and timezone.now() - confirmed <= bound:
        return None
    if confirmed is None:
        return 403, _(
            "The identity provider never confirmed your team membership: sign in to the console once, then this "
            "token writes again."
        )
    return 403, _(
        "Your team membership was last confirmed by the identity provider at %(when)s UTC, more than %(bound)s "
        "ago: sign in to the console once, then this token writes again."
    ) % {"when": f"{confirmed:%Y-%m-%d %H:%M}", "bound": lockout.describe(bound)}
