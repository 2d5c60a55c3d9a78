"""A token of a single sign-on user writes only while the provider confirmed its owner's groups
recently (OIDC_TOKEN_MEMBERSHIP_MAX_AGE): a token has no refresh token, so a person removed from
a team in the provider must not keep the team's grants through it. Reads go on."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from consumers.identity import create_token
from consumers.identity.accounts import update_groups
from consumers.identity.models import IdpAccount

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
