"""The login page, logout and /admin/login/ with single sign-on configured or not, and password
login switched off; what a user without a role sees. No identity provider answers here (the
issuer is a closed port): what needs a real one is in test_keycloak.py."""

from __future__ import annotations

import base64

import pytest

from consumers.audit.models import AuditEvent
from tests.conftest import PASSWORD

CLOSED_ISSUER = "http://127.0.0.1:1/realms/console"


@pytest.fixture
def sso(settings):
    settings.OIDC_ISSUER = CLOSED_ISSUER
    settings.OIDC_CLIENT_ID = "rocketmq-console"
    settings.OIDC_CLIENT_SECRET = "secret"
    return settings


def logins() -> list[tuple[str, str, str]]:
    return [(e.action, e.username, e.details["method"]) for e in AuditEvent.objects.order_by("id")]


def test_without_an_issuer_the_page_is_the_password_form_alone(client, db):
    page = client.get("/login/").content.decode()
    assert 'name="password"' in page and "single sign-on" not in page
    assert client.get("/oidc/login/").status_code == 404
    assert client.get("/oidc/callback/?state=x&code=y").status_code == 404


def test_with_an_issuer_the_page_offers_single_sign_on_and_the_password_form(client, db, sso):
    page = client.get("/login/?next=/groups/").content.decode()
    assert 'id="sso-login" href="/oidc/login/?next=/groups/"' in page and 'name="password"' in page


def test_password_login_off_shows_only_single_sign_on_and_refuses_passwords(client, personas, sso):
    sso.PASSWORD_LOGIN = False
    page = client.get("/login/").content.decode()
    assert 'id="sso-login"' in page and 'name="password"' not in page
    refused = client.post("/login/", {"username": "admin", "password": PASSWORD})
    assert refused.status_code == 403 and b"Password login is off" in refused.content
    assert b'name="password"' not in refused.content
    assert client.get("/").status_code == 302  # not logged in
    # the Django admin's own login page is the console's, and takes no password either
    assert client.get("/admin/login/")["Location"] == "/login/?next=/admin/"
    assert client.post("/admin/login/", {"username": "admin", "password": PASSWORD}).status_code == 403
    # nor does the API's Basic auth, when it is on
    sso.API_BASIC_AUTH = True
    basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    assert client.get("/api/clusters/", HTTP_AUTHORIZATION=f"Basic {basic}").status_code == 401
    assert not AuditEvent.objects.filter(action="login").exists()


def test_password_logins_and_logouts_are_audited(client, personas):
    assert client.post("/login/", {"username": "viewer", "password": PASSWORD}).status_code == 302
    assert client.post("/logout/")["Location"] == "/login/"
    assert client.post("/admin/login/?next=/admin/", {"username": "admin", "password": PASSWORD}).status_code == 302
    assert client.post("/logout/").status_code == 302
    assert logins() == [("login", "viewer", "password"), ("logout", "viewer", "password"),
                        ("login", "admin", "password"), ("logout", "admin", "password")]  # fmt: skip
    assert AuditEvent.objects.filter(action="login").first().details["roles"] == ["viewer"]
    assert client.post("/logout/").status_code == 302  # logged out already: nothing more to audit
    assert AuditEvent.objects.count() == 4


def test_a_provider_that_cannot_be_reached_is_a_503_page_not_a_500(client, db, sso):
    response = client.get("/oidc/login/")
    assert response.status_code == 503 and b"cannot be reached" in response.content
    forged = client.get("/oidc/callback/?state=forged&code=forged")
    assert forged.status_code == 503


@pytest.mark.parametrize(
    ("query", "status", "says"),
    [
        ("", 400, b"lacks its state or code"),
        ("?code=c", 400, b"lacks its state or code"),
        ("?error=access_denied&error_description=no+thanks&state=s", 403, b"access_denied no thanks"),
        ("?error=server_error", 400, b"server_error"),
    ],
)
def test_a_callback_without_a_code_is_refused_before_the_provider_is_asked(client, db, sso, query, status, says):
    response = client.get("/oidc/callback/" + query)
    assert response.status_code == status and says in response.content
    assert b"Sign-in refused" in response.content


def test_an_unsafe_next_is_dropped(client, db, sso, monkeypatch):
    from django.http import HttpResponseRedirect

    monkeypatch.setattr("consumers.identity.oidc.authorization_redirect", lambda r, uri: HttpResponseRedirect("/x"))
    client.get("/oidc/login/?next=https://evil.example.com/")
    assert client.session["oidc_next"] == ""
    client.get("/oidc/login/?next=/groups/")
    assert client.session["oidc_next"] == "/groups/"


def test_a_user_without_a_role_is_told_they_have_no_access_yet(client, personas, redis):
    client.force_login(personas["nobody"])
    for url in ("/", "/groups/", "/audit/"):
        response = client.get(url)
        assert response.status_code == 403, url
        html = response.content.decode()
        assert 'id="no-access"' in html and "nobody" in html and "no role in the console yet" in html
        assert 'href="/groups/"' not in html  # no navigation to pages they may not see
    assert client.get("/api/groups/").json()["error"] == "your account has no console role"
    client.force_login(personas["viewer"])
    assert b'id="no-access"' not in client.get("/audit/").content


@pytest.mark.parametrize("value", ["\x00", "%ED%A0%80", "²", "x" * 5000, "</script>", "%FF"])
def test_hostile_values_in_a_callback_or_a_next_are_refused_not_a_500(client, db, sso, value, monkeypatch):
    from django.http import HttpResponseRedirect

    for query in (f"error={value}&error_description={value}", f"state={value}", f"code={value}"):
        assert client.get(f"/oidc/callback/?{query}").status_code in (400, 403)
    monkeypatch.setattr("consumers.identity.oidc.authorization_redirect", lambda r, uri: HttpResponseRedirect("/x"))
    assert client.get(f"/oidc/login/?next={value}").status_code == 302


def test_groups_missing_from_the_id_token_are_read_from_userinfo(sso, monkeypatch):
    """Some providers (Okta's org server, for one) send groups from the userinfo endpoint only."""
    from consumers.identity import oidc

    monkeypatch.setattr(oidc, "metadata", lambda: {"issuer": CLOSED_ISSUER, "userinfo_endpoint": "x"})
    answers = {"sub": "s-1", "groups": ["ops"], "email": "other@example.com"}
    monkeypatch.setattr(oidc.client(), "userinfo", lambda token: dict(answers))
    id_token = {"sub": "s-1", "email": "a@example.com"}
    assert oidc.with_userinfo({}, id_token) == {"sub": "s-1", "email": "a@example.com", "groups": ["ops"]}
    assert oidc.with_userinfo({}, {**id_token, "groups": []}) == {**id_token, "groups": []}  # the token says
    answers["sub"] = "someone-else"
    assert oidc.with_userinfo({}, id_token) == id_token
