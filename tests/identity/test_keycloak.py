"""Single sign-on against a real Keycloak (one per test session, devstack/keycloak.py): the
console's own callback, token checks and logout, with the Django test client as the console's
browser and tests.support.oidc as Keycloak's (its login form, filled as a person would); API
tokens of users disabled or removed from a team there (Keycloak's admin API), and Keycloak's
back-channel logout. The same round trip in Chromium is test_browser_sso.py."""

from __future__ import annotations

import base64
import html
import json
import queue
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.models import Group
from django.contrib.sessions.models import Session
from django.test import Client

from consumers.audit.models import AuditEvent
from consumers.identity import Grant, IdpAccount, create_token, oidc
from consumers.models import Cluster
from devstack.keycloak import realm
from tests.support.oidc import KeycloakBrowser, code_flow

pytestmark = pytest.mark.keycloak
HOST = "127.0.0.1:8123"  # the console as Keycloak sees it (its client allows http://127.0.0.1:*)
# where Keycloak posts logout tokens outside the back-channel tests: nothing listens (the realm
# file names the demo's console, http://127.0.0.1:8000, which may be another run's)
NOWHERE = "http://127.0.0.1:9/oidc/backchannel-logout/"


@pytest.fixture
def sso(settings, keycloak):
    settings.OIDC_ISSUER = keycloak.issuer
    settings.OIDC_CLIENT_ID = keycloak.client_id
    settings.OIDC_CLIENT_SECRET = keycloak.client_secret
    settings.OIDC_TIMEOUT = 60  # a Keycloak on 2 cores shared with a RocketMQ test run
    if getattr(keycloak, "backchannel_url", None) is None:
        keycloak.set_backchannel_logout(NOWHERE)
        keycloak.backchannel_url = NOWHERE
    return keycloak


@pytest.fixture
def console(db):
    return Client(HTTP_HOST=HOST)


def start(console) -> str:
    """The console's redirect to Keycloak (its login page)."""
    response = console.get("/oidc/login/")
    assert response.status_code == 302, response.content
    return response["Location"]


def sign_in(console, keycloak, username: str, browser: KeycloakBrowser | None = None):
    back = (browser or KeycloakBrowser()).sign_in(start(console), username, keycloak.users[username]["password"])
    assert back.startswith(f"http://{HOST}/oidc/callback/?")
    return console.get(back.removeprefix(f"http://{HOST}"))


def payload(token: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


def test_alice_signs_in_is_found_by_sub_and_has_no_access_until_given_a_role(console, sso, redis):
    answer = sign_in(console, sso, "alice")
    assert answer.status_code == 302 and answer["Location"] == "/"
    account = IdpAccount.objects.select_related("user").get(subject=sso.user_id("alice"))
    user = account.user
    assert (account.issuer, user.username, user.email) == (sso.issuer, "alice", "alice@example.com")
    assert sorted(user.groups.values_list("name", flat=True)) == ["idp:payments"]
    page = console.get("/")
    assert page.status_code == 403 and b'id="no-access"' in page.content and b"payments" in page.content
    event = AuditEvent.objects.get(action="login")
    assert event.username == "alice"
    assert {k: event.details[k] for k in ("method", "issuer", "idp_groups", "roles", "created")} == {
        "method": "oidc", "issuer": sso.issuer, "idp_groups": ["payments"], "roles": [], "created": True}  # fmt: skip
    user.groups.add(Group.objects.get(name="viewer"))  # a local admin gives a role
    assert console.get("/").status_code == 200


def test_a_replayed_a_forged_and_a_foreign_callback_are_refused(console, sso, redis):
    browser = KeycloakBrowser()
    back = browser.sign_in(start(console), "bob", sso.users["bob"]["password"]).removeprefix(f"http://{HOST}")
    assert console.get(back).status_code == 302  # signed in
    replayed = console.get(back)  # the same answer again: its state was used up
    assert replayed.status_code == 400 and b"does not belong to this browser session" in replayed.content
    elsewhere = Client(HTTP_HOST=HOST).get(back)  # another browser (a login CSRF): no such state there
    assert elsewhere.status_code == 400
    # a real state with a made-up code: Keycloak refuses the code
    state = parse_qs(urlparse(start(console)).query)["state"][0]
    forged = console.get(f"/oidc/callback/?state={state}&code=made-up")
    assert forged.status_code == 400 and b"refused the sign-in code: invalid_grant" in forged.content
    # the answer of a login started in one browser, opened in another
    other = Client(HTTP_HOST=HOST)
    theirs = KeycloakBrowser().sign_in(start(other), "carol", sso.users["carol"]["password"])
    assert console.get(theirs.removeprefix(f"http://{HOST}")).status_code == 400
    assert other.get(theirs.removeprefix(f"http://{HOST}")).status_code == 302  # still good where it began
    assert AuditEvent.objects.filter(action="login").count() == 2  # bob, carol: refusals are logged only


def test_id_tokens_that_do_not_validate_are_refused(console, sso, monkeypatch):
    """Real tokens signed by this Keycloak, handed to the callback as the token endpoint's
    answer: for another client, with another issuer, with another nonce, with a byte changed."""
    password = sso.users["carol"]["password"]
    other_app = next(c for c in realm()["clients"] if c["clientId"] == "other-app")
    good = code_flow(sso.issuer, sso.client_id, sso.client_secret, "carol", password, nonce="not-the-sessions")
    header, body, signature = good["id_token"].split(".")
    forged_body = (
        base64.urlsafe_b64encode(json.dumps({**payload(good["id_token"]), "preferred_username": "admin"}).encode())
        .rstrip(b"=")
        .decode()
    )
    elsewhere = sso.issuer.replace("127.0.0.1", "localhost")  # same keys, another issuer
    cases = {
        "invalid_claim: aud": code_flow(sso.issuer, "other-app", other_app["secret"], "carol", password, nonce="n"),
        "invalid_claim: iss": code_flow(elsewhere, sso.client_id, sso.client_secret, "carol", password, nonce="n"),
        "invalid_claim: nonce": good,
        "bad_signature": {**good, "id_token": f"{header}.{forged_body}.{signature}"},
        "unsupported_algorithm": {**good, "id_token": "eyJhbGciOiJub25lIn0." + body + "."},  # alg none
    }
    assert payload(cases["invalid_claim: iss"]["id_token"])["iss"] == elsewhere
    assert payload(cases["invalid_claim: aud"]["id_token"])["aud"] == "other-app"
    for name, token in cases.items():
        state = parse_qs(urlparse(start(console)).query)["state"][0]
        monkeypatch.setattr(oidc.client(), "fetch_access_token", lambda token=token, **kwargs: dict(token))
        answer = console.get(f"/oidc/callback/?state={state}&code=whatever")
        says = f"ID token is not valid ({name})".encode()
        assert answer.status_code == 400 and says in answer.content, (name, answer.content)
    assert not IdpAccount.objects.exists() and "_auth_user_id" not in console.session


def test_a_group_change_in_keycloak_shows_at_the_next_sign_in(console, sso):
    def groups():
        return sorted(IdpAccount.objects.get(subject=sso.user_id("alice")).user.groups.values_list("name", flat=True))

    sign_in(console, sso, "alice")
    assert groups() == ["idp:payments"]
    sso.set_membership("alice", "payments", False)
    sso.set_membership("alice", "orders", True)
    try:
        console.post("/logout/")
        sign_in(console, sso, "alice")
        assert groups() == ["idp:orders"]
        assert AuditEvent.objects.filter(action="login").last().details["removed"] == ["payments"]
    finally:
        sso.set_membership("alice", "orders", False)
        sso.set_membership("alice", "payments", True)


def test_logout_ends_the_keycloak_session_too(console, sso):
    browser = KeycloakBrowser()
    sign_in(console, sso, "carol", browser)
    assert browser.login_form(start(Client(HTTP_HOST=HOST))) is None  # Keycloak's session: no password asked
    out = console.post("/logout/")
    end_session = oidc.metadata()["end_session_endpoint"]
    found = re.search(r'id="end-session" href="([^"]+)"', out.content.decode())
    url = html.unescape(found.group(1))
    assert out.status_code == 200 and url.startswith(end_session + "?")
    assert f'http-equiv="refresh" content="0;url={found.group(1)}"' in out.content.decode()
    query = parse_qs(urlparse(url).query)
    assert query["post_logout_redirect_uri"] == [f"http://{HOST}/login/"] and query["client_id"] == [sso.client_id]
    assert payload(query["id_token_hint"][0])["preferred_username"] == "carol"
    back = browser.get(url)  # Keycloak ends its session and sends the browser back
    assert back.status_code == 302 and back.headers["Location"].startswith(f"http://{HOST}/login/")
    assert browser.login_form(start(Client(HTTP_HOST=HOST))) is not None  # the password is asked again
    assert console.get("/").status_code == 302
    assert [e.details["method"] for e in AuditEvent.objects.filter(action="logout")] == ["oidc"]


def test_a_member_removed_from_the_team_loses_its_grant_before_the_next_write(console, sso, settings):
    """Membership is read again from Keycloak before every write, and for reads once it is older
    than OIDC_RECHECK_SECONDS: removed from payments there, alice is refused at her next write
    (audited), and at her next read once the bound has passed."""
    Grant.objects.create(subject_kind="idp_group", subject="payments", role="viewer", clusters="*", groups="*")
    sign_in(console, sso, "alice")
    assert console.get("/account/tokens/").status_code == 200  # a viewer through the team's grant
    sso.set_membership("alice", "payments", False)
    try:
        assert console.get("/account/tokens/").status_code == 200  # a read within the bound: the groups last known
        refused = console.post("/account/tokens/new/", {"name": "script", "days": "1"})
        assert refused.status_code == 403
        changed = AuditEvent.objects.get(action="idp-groups-changed")
        assert (changed.username, changed.details["removed"]) == ("alice", ["payments"])
        assert AuditEvent.objects.filter(action="write-refused", username="alice").exists()
        assert console.get("/account/tokens/").status_code == 403
        sso.set_membership("alice", "payments", True)
        settings.OIDC_RECHECK_SECONDS = 0  # every read re-reads it now: back in the team, back in
        assert console.get("/account/tokens/").status_code == 200
    finally:
        sso.set_membership("alice", "payments", True)


def test_a_session_ended_at_keycloak_ends_in_the_console_at_the_next_check(console, sso, settings):
    Grant.objects.create(subject_kind="user", subject="bob", role="viewer", clusters="*", groups="*")
    sign_in(console, sso, "bob")
    assert console.get("/account/tokens/").status_code == 200
    sso.admin("POST", f"/users/{sso.user_id('bob')}/logout")  # an administrator signs bob out everywhere
    settings.OIDC_RECHECK_SECONDS = 0
    answer = console.get("/account/tokens/")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    ended = AuditEvent.objects.filter(action="logout").last()
    assert ended.details["ended_by"] == "identity provider"
    assert console.get("/account/tokens/").status_code == 302  # signed out for good


# --- API tokens and Keycloak's admin API (OIDC_KEYCLOAK_ADMIN_API), back-channel logout ---

RECHECK = 5  # OIDC_RECHECK_SECONDS here: the bound within which a token's owner is asked again
TEAM_WRITE = {"cluster": "east", "group": "payments-worker", "params": {"strategy": "earliest"}, "reason": "replay"}


@pytest.fixture
def alice_token(console, sso, settings):
    """alice, a viewer everywhere and through Keycloak's /payments an operator of payments-*,
    signed in once to make a token, then out of the console: no browser session is left."""
    settings.OIDC_KEYCLOAK_ADMIN_API = True
    settings.OIDC_RECHECK_SECONDS = RECHECK
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")  # closed: an allowed write answers 502
    Grant.objects.create(subject_kind="idp_group", subject="payments", role="operator", groups="payments-*")
    Grant.objects.create(subject_kind="user", subject="alice", role="viewer")
    sign_in(console, sso, "alice")
    user = IdpAccount.objects.get(subject=sso.user_id("alice")).user
    _token, secret = create_token(user, name="cron", days=None)
    console.post("/logout/")  # out of the console (Keycloak's session is left: the browser is not sent there)
    assert team_write(secret).status_code == 502  # past every check, to the (closed) broker
    yield secret
    sso.set_membership("alice", "payments", True)
    sso.set_enabled("alice", True)


def team_write(secret: str):
    return Client().post("/api/changes/", json.dumps(TEAM_WRITE), content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")  # fmt: skip


def first_refusal(secret: str, deadline: float) -> tuple[float, object]:
    """Token writes one after another until one is refused (403): (seconds it took, that answer)."""
    started = time.monotonic()
    while True:
        answer = team_write(secret)
        if answer.status_code == 403 or time.monotonic() - started > deadline:
            return time.monotonic() - started, answer
        assert answer.status_code == 502, answer.content
        time.sleep(0.25)


def test_a_member_removed_in_keycloak_loses_token_writes_to_the_team_within_the_bound(alice_token, sso):
    sso.set_membership("alice", "payments", False)
    took, refused = first_refusal(alice_token, deadline=RECHECK + 30)
    print(f"\nremoved from /payments: first refused token write after {took:.1f} s (bound {RECHECK} s)")
    assert refused.status_code == 403, refused.content
    assert "operator role on group payments-worker" in refused.json()["error"]
    assert took <= RECHECK + 10  # the bound, and the seconds a loaded machine takes to answer
    changed = AuditEvent.objects.get(action="idp-groups-changed")
    assert (changed.username, changed.details["removed"]) == ("alice", ["payments"])
    assert changed.details["via"] == "api token"


def test_a_user_disabled_in_keycloak_loses_token_writes_and_browser_sessions_within_the_bound(alice_token, sso):
    browser = Client(HTTP_HOST=HOST)
    sign_in(browser, sso, "alice")  # a browser session too, which must end with the token's writes
    sso.set_enabled("alice", False)
    took, refused = first_refusal(alice_token, deadline=RECHECK + 30)
    print(f"\ndisabled: first refused token write after {took:.1f} s (bound {RECHECK} s)")
    assert refused.status_code == 403 and "disabled at the identity provider" in refused.json()["error"]
    assert took <= RECHECK + 10
    assert not Session.objects.filter(session_key=browser.session.session_key).exists()  # before it asked anything
    ended = AuditEvent.objects.filter(action="logout", details__via="admin API").get()
    assert (ended.username, ended.details["sessions"]) == ("alice", 1)
    sso.set_enabled("alice", True)  # enabled again: the next write asks at once (suspended), and writes
    assert team_write(alice_token).status_code == 502


class Relay:
    """Keycloak's back-channel, received here: an HTTP server on 127.0.0.1 that keeps what Keycloak
    posts, for the test to hand to the console (which has no HTTP server in these tests)."""

    def __init__(self):
        self.received = queue.Queue()
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                received.put(parse_qs(body).get("logout_token", [""])[0])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/oidc/backchannel-logout/"

    def next_token(self, timeout: float = 30) -> str:
        return self.received.get(timeout=timeout)


@pytest.fixture
def relay(sso):
    found = Relay()
    sso.set_backchannel_logout(found.url)
    sso.backchannel_url = found.url
    yield found
    sso.set_backchannel_logout(NOWHERE)
    sso.backchannel_url = NOWHERE
    found.server.shutdown()


def backchannel(logout_token: str):
    """The logout token posted to the console as Keycloak posts it (another client: no cookies)."""
    return Client(HTTP_HOST=HOST).post("/oidc/backchannel-logout/", {"logout_token": logout_token})


def test_sessions_ended_by_an_administrator_end_in_the_console_at_once(console, sso, relay, settings):
    """Keycloak 26.5 posts a logout token when an administrator signs a user out (not when it
    disables them: that is the admin API's, above): the console session ends before its next request."""
    Grant.objects.create(subject_kind="user", subject="bob", role="viewer")
    sign_in(console, sso, "bob")
    assert console.get("/account/tokens/").status_code == 200
    sso.admin("POST", f"/users/{sso.user_id('bob')}/logout")
    logout_token = relay.next_token()
    assert payload(logout_token)["sid"] and "nonce" not in payload(logout_token)
    assert backchannel(logout_token).status_code == 200
    assert console.get("/account/tokens/").status_code == 302  # signed out, not by a re-check
    ended = AuditEvent.objects.get(action="logout", details__via="back-channel logout")
    assert ended.username == "bob" and ended.details["sessions"] == 1
    assert IdpAccount.objects.get(subject=sso.user_id("bob")).suspended  # token writes wait for a confirmation
    replayed = backchannel(logout_token)
    assert replayed.status_code == 400 and "used already" in replayed.json()["error_description"]


def test_the_echo_of_the_consoles_own_logout_suspends_no_token(console, sso, relay):
    """Keycloak tells every client of a session it ends, the one that asked too: signing out of
    the console must not stop one's scripts."""
    browser = KeycloakBrowser()
    sign_in(console, sso, "carol", browser)
    out = console.post("/logout/")
    url = html.unescape(re.search(r'id="end-session" href="([^"]+)"', out.content.decode()).group(1))
    assert browser.get(url).status_code == 302  # Keycloak ends its session, and posts the logout token
    assert backchannel(relay.next_token()).status_code == 200
    assert not IdpAccount.objects.get(subject=sso.user_id("carol")).suspended
    assert not AuditEvent.objects.filter(action="logout", details__via="back-channel logout").exists()
