"""Claims to profile, username and IdP groups (consumers/identity/claims.py), and recording them
at each sign-in (accounts.py): no identity provider needed."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from consumers.identity import IdpAccount, accounts
from consumers.identity.claims import fallback_username, idp_groups, normalise_group, preferred_username, profile

ISSUER = "https://idp.example.com/realms/console"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/payments", "payments"),
        ("payments", "payments"),
        ("/teams/payments", "teams/payments"),
        ("  /teams//payments/ ", "teams/payments"),
        ("Payments", "Payments"),  # the provider's spelling: grants name groups as it does
        ("", None),
        ("/", None),
        (None, None),
        (42, None),
        ({"name": "payments"}, None),
        ("x" * 146, "x" * 146),
        ("x" * 147, None),  # idp: + the name would not fit a group name (150)
    ],
)
def test_a_group_is_normalised_or_dropped(value, expected):
    assert normalise_group(value) == expected


def test_groups_come_from_the_named_claim_sorted_and_once():
    claims = {"groups": ["/payments", "/orders", "payments", "/teams/payments", 7]}
    assert idp_groups(claims, "groups") == ["orders", "payments", "teams/payments"]
    assert idp_groups({"groups": "/payments"}, "groups") == ["payments"]  # one group as a string


def test_a_nested_claim_is_named_with_dots_and_an_exact_name_wins():
    claims = {"realm_access": {"roles": ["admins", "offline_access"]}}
    assert idp_groups(claims, "realm_access.roles") == ["admins", "offline_access"]
    url_claim = {"https://example.com/groups": ["ops"]}  # claims named with URLs (Auth0 and others)
    assert idp_groups(url_claim, "https://example.com/groups") == ["ops"]


@pytest.mark.parametrize("claims", [{}, {"groups": None}, {"groups": {"a": 1}}, {"groups": 3}, {"roles": ["x"]}])
def test_no_usable_groups_claim_is_no_groups(claims):
    assert idp_groups(claims, "groups") == []


def test_the_profile_and_the_username_a_new_user_would_like():
    claims = {"sub": "s-1", "preferred_username": " alice ", "given_name": "Alice", "family_name": "P",
              "email": "alice@example.com", "name": "ignored"}  # fmt: skip
    assert profile(claims) == {"first_name": "Alice", "last_name": "P", "email": "alice@example.com"}
    assert profile({"given_name": ["not", "text"]}) == {"first_name": "", "last_name": "", "email": ""}
    assert preferred_username(claims) == "alice"
    assert preferred_username({"sub": "s-1", "email": "a@example.com"}) == "a@example.com"
    assert preferred_username({"sub": "s-1"}) == "s-1"
    taken = fallback_username("alice", ISSUER, "s-1")
    assert taken.startswith("alice-") and taken == fallback_username("alice", ISSUER, "s-1")
    assert taken != fallback_username("alice", ISSUER, "s-2")
    assert len(fallback_username("x" * 150, ISSUER, "s-1")) == 150


def alice(**extra) -> dict:
    return {"sub": "sub-alice", "preferred_username": "alice", "given_name": "Alice", "family_name": "Payments",
            "email": "alice@example.com", "groups": ["/payments"], **extra}  # fmt: skip


def names(user) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


def test_the_first_sign_in_creates_a_user_without_password_or_role(personas):
    signed = accounts.sign_in(ISSUER, alice(), "groups")
    user = signed.user
    assert signed.created and signed.added == ["payments"] and signed.removed == []
    assert (user.username, user.first_name, user.email) == ("alice", "Alice", "alice@example.com")
    assert not user.has_usable_password() and not user.is_staff and not user.is_superuser
    assert names(user) == ["idp:payments"]
    assert not user.has_perm("consumers.view_console")
    account = IdpAccount.objects.get(user=user)
    assert (account.issuer, account.subject, account.groups) == (ISSUER, "sub-alice", ["payments"])


def test_the_next_sign_in_finds_the_user_by_sub_and_replaces_only_idp_groups(personas):
    user = accounts.sign_in(ISSUER, alice(), "groups").user
    user.groups.add(Group.objects.get(name="operator"))  # a local admin gave a role
    local = Group.objects.create(name="on-call")
    user.groups.add(local)
    again = accounts.sign_in(ISSUER, alice(preferred_username="alice2", email="new@example.com",
                                           groups=["/orders", "/teams/payments"]), "groups")  # fmt: skip
    assert again.user.pk == user.pk and not again.created
    assert again.added == ["orders", "teams/payments"] and again.removed == ["payments"]
    assert again.user.username == "alice" and again.user.email == "new@example.com"  # username stays
    assert names(again.user) == ["idp:orders", "idp:teams/payments", "on-call", "operator"]
    gone = accounts.sign_in(ISSUER, alice(groups=None), "groups")  # the provider stopped sending groups
    assert names(gone.user) == ["on-call", "operator"] and gone.removed == ["orders", "teams/payments"]
    assert Group.objects.filter(name="idp:payments").exists()  # the group stays for its other members


def test_an_account_is_never_matched_by_username_or_email(personas):
    """A provider account named like a local one (the break-glass admin) gets a user of its own."""
    local_admin = personas["admin"]
    claims = {"sub": "sub-mallory", "preferred_username": "admin", "email": local_admin.email or "admin@example.com"}
    signed = accounts.sign_in(ISSUER, claims, "groups")
    assert signed.created and signed.user.pk != local_admin.pk
    assert signed.user.username == fallback_username("admin", ISSUER, "sub-mallory")
    assert not signed.user.has_perm("consumers.view_console")
    # the same sub at another issuer is another person
    other = accounts.sign_in("https://other.example.com", {**claims, "preferred_username": "m"}, "groups")
    assert other.user.pk != signed.user.pk
    assert get_user_model().objects.filter(idp_account__subject="sub-mallory").count() == 2


@pytest.mark.parametrize("sub", [None, "", 12, "x" * 256])
def test_a_token_without_a_usable_sub_signs_nobody_in(db, sub):
    with pytest.raises(accounts.AccountError, match="sub"):
        accounts.sign_in(ISSUER, {"sub": sub, "preferred_username": "x"}, "groups")
    assert not get_user_model().objects.exists()
