"""/oidc/backchannel-logout/ (consumers/identity/backchannel.py) with logout tokens signed here by a
key of the test's own, published as the provider's JWKS: what ends sessions and suspends token
writes, and every token the endpoint refuses (400, nothing ended). Keycloak's own logout tokens
reach the endpoint in test_keycloak.py."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from consumers.audit.models import AuditEvent
from consumers.identity import create_token, oidc
from consumers.identity.backchannel import EVENT
from consumers.identity.models import IdpAccount, IdpSession
from consumers.identity.sessions import record

ISSUER = "https://idp.example/realms/console"
CLIENT_ID = "rocketmq-console"
URL = "/oidc/backchannel-logout/"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})
OTHER_KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})  # same kid, not the provider's


@pytest.fixture
def provider(settings, monkeypatch, db):
    """The provider's discovery document and keys, as oidc.py's client holds them once read."""
    settings.OIDC_ISSUER, settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET = ISSUER, CLIENT_ID, "secret"
    metadata = {"issuer": ISSUER, "jwks": KeySet([KEY]).as_dict(private=False), "_loaded_at": time.time(),
                "id_token_signing_alg_values_supported": ["RS256", "HS256"]}  # fmt: skip
    monkeypatch.setattr(oidc.client(), "server_metadata", metadata)
    return metadata


@pytest.fixture
def signed_in(provider, personas):
    """The operator as a single sign-on user with a browser session of provider session sid-1."""
    user = personas["operator"]
    IdpAccount.objects.create(user=user, issuer=ISSUER, subject="s-1", groups_confirmed_at=_now())
    browser = Client()
    browser.force_login(user)
    request = type("Request", (), {"session": browser.session})()
    record(request, user, {"sid": "sid-1"})
    return browser


def _now():
    from django.utils import timezone

    return timezone.now()


def claims(**changes) -> dict:
    now = int(time.time())
    found = {"iss": ISSUER, "aud": CLIENT_ID, "iat": now, "exp": now + 120, "jti": str(uuid.uuid4()), "sub": "s-1",
             "sid": "sid-1", "typ": "Logout", "events": {EVENT: {}}}  # fmt: skip
    found.update(changes)
    return {k: v for k, v in found.items() if v is not None}


def token(payload: dict, *, key=KEY, alg: str = "RS256") -> str:
    return jwt.encode({"alg": alg, "kid": "k1", "typ": "logout+jwt"}, payload, key)


def post(logout_token: str):
    return Client().post(URL, {"logout_token": logout_token})


def signed_in_still(browser) -> bool:
    return Session.objects.filter(session_key=browser.session.session_key).exists()


def test_a_logout_token_ends_the_session_it_names_and_suspends_token_writes(signed_in, personas, client):
    other = Client()
    other.force_login(personas["operator"])  # a session the provider knows nothing of: no sid
    answer = post(token(claims()))
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    assert not signed_in_still(signed_in) and signed_in_still(other)
    assert signed_in.get("/account/tokens/").status_code == 302  # signed out
    account = IdpAccount.objects.get(subject="s-1")
    assert account.suspended and account.suspended_why == "back-channel logout of session sid-1"
    event = AuditEvent.objects.get(action="logout")
    assert (event.username, event.details["via"], event.details["sessions"]) == ("operator", "back-channel logout", 1)
    # its tokens refuse writes until the provider confirms the groups again (a sign-in)
    _token, secret = create_token(personas["operator"], name="cron", days=None)
    write = client.post("/api/changes/", json.dumps({"cluster": "east", "group": "g", "params": 1}),
                        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")  # fmt: skip
    assert write.status_code == 403 and "ended your sessions" in write.json()["error"]


def test_a_token_with_only_sub_ends_every_session_and_one_with_only_sid_that_session(signed_in, personas):
    other = Client()
    other.force_login(personas["operator"])
    record(type("Request", (), {"session": other.session})(), personas["operator"], {"sid": "sid-2"})
    assert post(token(claims(sid=None))).status_code == 200
    assert not signed_in_still(signed_in) and not signed_in_still(other)
    assert not IdpSession.objects.exists()
    again = Client()
    again.force_login(personas["operator"])
    record(type("Request", (), {"session": again.session})(), personas["operator"], {"sid": "sid-3"})
    assert post(token(claims(sub=None, sid="sid-3"))).status_code == 200
    assert not signed_in_still(again)


def test_the_echo_of_the_consoles_own_logout_suspends_nothing(signed_in):
    session = signed_in.session
    session["oidc_id_token"] = "the-id-token"  # a single sign-on session's
    session.save()
    signed_in.post("/logout/")  # the provider then tells the console back about the same sid
    assert IdpSession.objects.get().signed_out_at is not None
    assert post(token(claims())).status_code == 200
    assert not IdpAccount.objects.get(subject="s-1").suspended
    assert not AuditEvent.objects.filter(action="logout", details__via="back-channel logout").exists()


def test_an_unknown_subject_is_accepted_and_ends_nothing(signed_in):
    assert post(token(claims(sub="someone-else", sid="their-sid"))).status_code == 200
    assert signed_in_still(signed_in) and not AuditEvent.objects.filter(action="logout").exists()


REFUSED = {
    "bad signature": lambda: token(claims(), key=OTHER_KEY),
    "a byte changed": lambda: _tampered(token(claims())),
    "alg none": lambda: "eyJhbGciOiJub25lIn0." + token(claims()).split(".")[1] + ".",
    "a shared-secret algorithm": lambda: _hs256(claims()),
    "wrong aud": lambda: token(claims(aud="other-app")),
    "wrong iss": lambda: token(claims(iss="https://elsewhere.example/realms/console")),
    "missing events": lambda: token(claims(events=None)),
    "another event": lambda: token(claims(events={"http://schemas.openid.net/event/other": {}})),
    "nonce present": lambda: token(claims(nonce="n")),
    "no sub nor sid": lambda: token(claims(sub=None, sid=None)),
    "no iat": lambda: token(claims(iat=None)),
    "issued in the future": lambda: token(claims(iat=int(time.time()) + 3600, exp=int(time.time()) + 3700)),
    "expired": lambda: token(claims(iat=int(time.time()) - 600, exp=int(time.time()) - 300)),
    "no exp and old": lambda: token(claims(iat=int(time.time()) - 900, exp=None)),
    "lives for a year": lambda: token(claims(exp=int(time.time()) + 365 * 86400)),
    "no jti": lambda: token(claims(jti=None)),
    "not a JWT": lambda: "not-a-token",
    "empty": lambda: "",
    "huge": lambda: "x" * 20_000,
}


def _tampered(value: str) -> str:
    header, payload, signature = value.split(".")
    return f"{header}.{payload[:-2]}{'A' if payload[-2] != 'A' else 'B'}{payload[-1]}.{signature}"


def _hs256(payload: dict) -> str:
    from joserfc.jwk import OctKey

    return jwt.encode({"alg": "HS256", "kid": "k1"}, payload, OctKey.import_key("secret" * 6))


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_token_that_does_not_validate_is_refused_and_ends_nothing(signed_in, case):
    answer = post(REFUSED[case]())
    assert answer.status_code == 400, (case, answer.content)
    assert answer.json()["error"] == "invalid_request" and answer.json()["error_description"]
    assert signed_in_still(signed_in) and not IdpAccount.objects.get(subject="s-1").suspended


def test_a_replayed_token_is_refused(signed_in):
    used = token(claims(sid="sid-other"))
    assert post(used).status_code == 200
    replayed = post(used)
    assert replayed.status_code == 400 and "used already" in replayed.json()["error_description"]


def test_keys_that_cannot_be_fetched_are_a_503_and_other_methods_a_405(signed_in, provider):
    provider.pop("jwks")
    provider["jwks_uri"] = "http://127.0.0.1:1/certs"  # a closed port
    answer = post(token(claims()))
    assert answer.status_code == 503 and "cannot be reached" in answer.json()["error_description"]
    assert signed_in_still(signed_in)
    assert Client().get(URL).status_code == 405


def test_without_single_sign_on_there_is_no_endpoint(db):
    assert Client().post(URL, {"logout_token": "x"}).status_code == 404
