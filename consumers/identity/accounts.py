"""The console user of an identity provider's account, created or updated at each sign-in, and
its IdP group memberships (claims.py says how they are named)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from . import claims as claim_rules
from .models import IdpAccount


class AccountError(ValueError):
    pass


@dataclass
class SignedIn:
    user: object
    created: bool
    groups: list[str]  # the IdP groups now (normalised, without the prefix)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def sign_in(issuer: str, claims: dict, groups_claim: str) -> SignedIn:
    """The user for (issuer, sub), created at the first sign-in, with the profile and IdP
    groups of these (already validated) claims. Only `idp:` groups change; a user created here
    has no password (it cannot log in with one) and no role until an admin gives one."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject or len(subject) > 255:
        raise AccountError("the ID token has no usable sub claim")
    for attempt in range(2):
        try:
            return _sign_in(issuer, subject, claims, groups_claim)
        except IntegrityError:
            # a first sign-in of the same account at the same moment, in another request,
            # created the user (or took the username) first: the second try finds it
            if attempt:
                raise
    raise AssertionError("unreachable")


@transaction.atomic
def _sign_in(issuer: str, subject: str, claims: dict, groups_claim: str) -> SignedIn:
    account = IdpAccount.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    created = account is None
    if created:
        account = IdpAccount(issuer=issuer, subject=subject, user=_new_user(issuer, subject, claims))
    user = account.user
    changed = {name: value for name, value in claim_rules.profile(claims).items() if getattr(user, name) != value}
    if changed:
        for name, value in changed.items():
            setattr(user, name, value)
        user.save(update_fields=list(changed))
    account.last_sign_in = timezone.now()
    found = update_groups(account, claims, groups_claim)
    return SignedIn(user=user, created=created, groups=found.groups, added=found.added, removed=found.removed)


def update_groups(account: IdpAccount, claims: dict, groups_claim: str) -> SignedIn:
    """Set the account's IdP groups to those of these (validated) claims: at each sign-in, and
    when a session's membership is read again (recheck.py)."""
    groups = claim_rules.idp_groups(claims, groups_claim)
    added, removed = _set_idp_groups(account.user, groups)
    account.groups = groups
    account.groups_confirmed_at = timezone.now()
    account.save()
    return SignedIn(user=account.user, created=False, groups=groups, added=added, removed=removed)


def _new_user(issuer: str, subject: str, claims: dict):
    User = get_user_model()
    wanted = claim_rules.preferred_username(claims) or subject
    username = wanted
    if User.objects.filter(username=username).exists():
        username = claim_rules.fallback_username(wanted, issuer, subject)
    user = User(username=username)
    user.set_unusable_password()
    user.save()
    return user


def _set_idp_groups(user, groups: list[str]) -> tuple[list[str], list[str]]:
    """Make the user's idp: memberships exactly `groups`; (added, removed)."""
    wanted = {claim_rules.group_name(name) for name in groups}
    current = set(user.groups.filter(name__startswith=claim_rules.IDP_GROUP_PREFIX).values_list("name", flat=True))
    removed = sorted(current - wanted)
    added = sorted(wanted - current)
    if removed:
        user.groups.remove(*Group.objects.filter(name__in=removed))
    if added:
        user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in added))
    strip = len(claim_rules.IDP_GROUP_PREFIX)
    return [name[strip:] for name in added], [name[strip:] for name in removed]
