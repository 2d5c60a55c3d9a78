"""A token of a single sign-on user writes only on groups the provider confirmed: recently
(OIDC_TOKEN_MEMBERSHIP_MAX_AGE), or asked at the write through Keycloak's admin API
(OIDC_KEYCLOAK_ADMIN_API, within OIDC_RECHECK_SECONDS): a token has no refresh token, so a person
removed from a team in the provider must not keep the team's grants through it. Reads go on."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.test import Client
from django.utils import timezone

from consumers.audit.models import AuditEvent
from consumers.identity import Grant, create_token, keycloak_admin, oidc, sessions
from consumers.identity.accounts import update_groups
from consumers.identity.models import IdpAccount
from consumers.models import Cluster

# a body the schema refuses: a write that passed every check before the view answers 400
WRITE = {"cluster": "east", "group": "orders", "params": {"strategy": "earliest"}, "reason": ""}


def _post(client, secret: str):
    return client.post("/api/changes/", json.dumps({**WRITE, "params": 1}), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {secret}")  # fmt: skip


@pytest.fixture
def sso_operator(personas, settings):
    settings.OIDC_TOKEN_MEMBERSHIP_MAX_AGE = 3600
    user = personas["operator"]
    account = IdpAccount.objects.create(user=user, issuer="https://idp.example", subject="s-1")
    _token, secret = create_token(user, name="cron", days=None)
    return account, secret


@pytest.mark.parametrize("confirmed_ago", [None, dt.timedelta(hours=2)])
def test_a_token_whose_owners_membership_is_not_confirmed_lately_does_not_write(client, sso_operator, confirmed_ago):
    account, secret = sso_operator
    account.groups_confirmed_at = timezone.now() - confirmed_ago if confirmed_ago else None
    account.save()
    refused = _post(client, secret)
    assert refused.status_code == 403 and "sign in to the console once" in refused.json()["error"]
    assert ("never" in refused.json()["error"]) == (confirmed_ago is None)
    assert client.get("/api/groups/", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200  # reads go on


def test_a_sign_in_confirms_the_membership_and_the_token_writes_again(client, sso_operator):
    account, secret = sso_operator
    assert _post(client, secret).status_code == 403
    update_groups(account, {"groups": ["/payments"]}, "groups")  # what a sign-in or a re-check does
    assert _post(client, secret).status_code == 400  # past the membership check, refused by the schema


def test_tokens_of_local_accounts_have_no_such_bound(client, personas, settings):
    settings.OIDC_TOKEN_MEMBERSHIP_MAX_AGE = 0
    _token, secret = create_token(personas["operator"], name="cron", days=None)
    assert _post(client, secret).status_code == 400


# --- with OIDC_KEYCLOAK_ADMIN_API: the token's write asks the provider (its admin API, stubbed here;
# the real one in tests/identity/test_keycloak.py) once the last confirmation is older than OIDC_RECHECK_SECONDS

KEYCLOAK = "https://idp.example/realms/console"
TEAM_WRITE = {"cluster": "east", "group": "payments-worker", "params": {"strategy": "earliest"}, "reason": "replay"}


@pytest.fixture
def member(personas, settings, monkeypatch):
    """nobody, a viewer everywhere and through the IdP group payments an operator of payments-*,
    with a token; the provider's answer is `provider["answer"]` (a list of groups or an exception)."""
    settings.OIDC_ISSUER, settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET = KEYCLOAK, "rocketmq-console", "s"
    settings.OIDC_KEYCLOAK_ADMIN_API = True
    settings.OIDC_RECHECK_SECONDS = 300
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")  # a closed port: an allowed write answers 502
    Grant.objects.create(subject_kind="idp_group", subject="payments", role="operator", groups="payments-*")
    Grant.objects.create(subject_kind="user", subject="nobody", role="viewer")
    account = IdpAccount.objects.create(user=personas["nobody"], issuer=KEYCLOAK, subject="s-2")
    update_groups(account, {"groups": ["/payments"]}, "groups")
    provider = {"answer": ["/payments"], "asked": 0}

    def groups_of(subject):
        assert subject == "s-2"
        provider["asked"] += 1
        if isinstance(provider["answer"], Exception):
            raise provider["answer"]
        return provider["answer"]

    monkeypatch.setattr(keycloak_admin, "groups_of", groups_of)
    _token, secret = create_token(personas["nobody"], name="cron", days=None)
    return account, secret, provider


def _team_write(client, secret: str):
    return client.post("/api/changes/", json.dumps(TEAM_WRITE), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {secret}")  # fmt: skip


def _age(account, seconds: int) -> None:
    IdpAccount.objects.filter(pk=account.pk).update(groups_confirmed_at=timezone.now() - dt.timedelta(seconds=seconds))


def test_within_the_bound_the_provider_is_not_asked(client, member):
    account, secret, provider = member
    assert _team_write(client, secret).status_code == 502  # past every check, to the (closed) broker
    assert provider["asked"] == 0


def test_past_the_bound_the_groups_the_provider_says_now_apply_to_the_write(client, member):
    account, secret, provider = member
    _age(account, 301)
    provider["answer"] = ["/orders"]  # removed from payments
    refused = _team_write(client, secret)
    assert refused.status_code == 403 and "operator role on group payments-worker" in refused.json()["error"]
    assert provider["asked"] == 1
    changed = AuditEvent.objects.get(action="idp-groups-changed")
    assert (changed.details["removed"], changed.details["added"], changed.details["via"]) == (
        ["payments"], ["orders"], "api token")  # fmt: skip
    assert _team_write(client, secret).status_code == 403 and provider["asked"] == 1  # confirmed just now


@pytest.mark.parametrize(("state", "says"), [("disabled", "disabled"), ("deleted", "no longer exists")])
def test_a_disabled_or_deleted_owner_is_refused_and_signed_out(client, member, personas, state, says):
    account, secret, provider = member
    browser = Client()
    browser.force_login(personas["nobody"])
    sessions.record(type("Request", (), {"session": browser.session})(), personas["nobody"], {"sid": "sid-1"})
    _age(account, 301)
    provider["answer"] = keycloak_admin.AccountGone(state)
    refused = _team_write(client, secret)
    assert refused.status_code == 403 and says in refused.json()["error"]
    assert browser.get("/account/tokens/").status_code == 302  # the browser session ended too
    ended = AuditEvent.objects.get(action="logout")
    assert (ended.details["via"], ended.details["why"]) == ("admin API", f"{state} at the identity provider")
    assert _team_write(client, secret).status_code == 403 and provider["asked"] == 2  # asked again: not re-enabled
    assert AuditEvent.objects.filter(action="logout").count() == 1  # signed out once
    provider["answer"] = ["/payments"]  # enabled again: writes again, without a sign-in
    assert _team_write(client, secret).status_code == 502


def test_a_provider_that_cannot_be_asked_refuses_the_write_with_a_503(client, member):
    account, secret, provider = member
    _age(account, 301)
    provider["answer"] = oidc.SignInError(503, "The identity provider cannot be reached (connection refused).")
    refused = _team_write(client, secret)
    assert refused.status_code == 503 and "connection refused" in refused.json()["error"]
    assert client.get("/api/changes/", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200  # reads go on


def test_after_a_back_channel_logout_the_next_write_asks_at_once(client, member):
    account, secret, provider = member
    IdpAccount.objects.filter(pk=account.pk).update(suspended_at=timezone.now(), suspended_why="back-channel logout")
    assert _team_write(client, secret).status_code == 502 and provider["asked"] == 1  # still a member: lifted
    assert not IdpAccount.objects.get(pk=account.pk).suspended


def test_without_the_admin_api_a_back_channel_logout_stops_writes_until_a_sign_in(client, sso_operator):
    account, secret = sso_operator
    update_groups(account, {"groups": ["/payments"]}, "groups")
    IdpAccount.objects.filter(pk=account.pk).update(suspended_at=timezone.now(), suspended_why="back-channel logout")
    refused = _post(client, secret)
    assert refused.status_code == 403 and "ended your sessions" in refused.json()["error"]
    update_groups(IdpAccount.objects.get(pk=account.pk), {"groups": ["/payments"]}, "groups")  # a sign-in
    assert _post(client, secret).status_code == 400
