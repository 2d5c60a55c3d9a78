"""Login throttling (django-axes, consumers/identity/lockout.py): AXES_FAILURE_LIMIT failures for one
username from anywhere, or from one address for any usernames, lock it; a lockout answers 429
and is audited; an admin unlocks in the Django admin."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.utils import timezone

from consumers.audit.models import AuditEvent
from consumers.identity.lockout import client_ip_behind_one_proxy, describe, lockout_response
from tests.conftest import PASSWORD

LOGIN = "/login/"


@pytest.fixture(autouse=True)
def throttle(settings):
    """The defaults, whatever the environment running the tests says."""
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 5
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=30)
    settings.AXES_CLIENT_IP_CALLABLE = None


@pytest.fixture
def limit() -> int:
    return settings.AXES_FAILURE_LIMIT


def fail(client, username: str, *, path: str = LOGIN, address: str = "127.0.0.1"):
    return client.post(path, {"username": username, "password": "not-the-password"}, REMOTE_ADDR=address)


def log_in(client, username: str, *, path: str = LOGIN, address: str = "127.0.0.1"):
    return client.post(path, {"username": username, "password": PASSWORD}, REMOTE_ADDR=address)


def assert_locked(response, *, what: str):
    assert response.status_code == 429
    html = response.content.decode()
    assert 'id="locked-out"' in html and what in html and "locked for 30 minutes" in html
    assert response["Retry-After"] == str(30 * 60)


def test_failures_for_one_username_lock_it_and_then_the_right_password_is_refused_too(client, personas, limit):
    for _ in range(limit - 1):
        response = fail(client, "viewer")
        assert response.status_code == 200 and b"did not match" in response.content
    assert_locked(fail(client, "viewer"), what="the account “viewer”")  # the limit-th failure locks
    assert_locked(log_in(client, "viewer"), what="the account “viewer”")
    assert client.get("/").status_code == 302  # not logged in
    # the username is locked from anywhere
    assert_locked(log_in(Client(), "viewer", address="192.0.2.50"), what="the account “viewer”")
    # (the address of those failures is locked too, for any username)
    assert_locked(log_in(Client(), "operator"), what="logins from your address")
    assert log_in(Client(), "operator", address="192.0.2.51").status_code == 302


def test_failures_from_one_address_lock_it_for_every_username(client, personas, limit):
    address = "192.0.2.7"
    for i in range(limit - 1):
        assert fail(client, f"guess-{i}", address=address).status_code == 200
    assert_locked(fail(client, "guess-last", address=address), what="logins from your address")
    # a username never tried before, with its right password, from that address: refused
    locked = log_in(client, "approver", address=address)
    assert_locked(locked, what="logins from your address")
    assert "the account “approver”" not in locked.content.decode()  # the username itself is not locked
    # the same username from another address is fine
    assert log_in(Client(), "approver", address="192.0.2.8").status_code == 302


def test_the_admin_login_is_throttled_too(client, personas, limit):
    for _ in range(limit - 1):
        assert fail(client, "admin", path="/admin/login/").status_code == 200
    assert_locked(fail(client, "admin", path="/admin/login/"), what="the account “admin”")
    assert_locked(log_in(client, "admin", path="/admin/login/"), what="the account “admin”")
    assert_locked(log_in(Client(), "admin", address="192.0.2.9"), what="the account “admin”")  # and the console's


def test_an_admin_unlocks_in_the_admin_and_the_right_password_works_again(client, personas, limit):
    for _ in range(limit):
        fail(client, "viewer")
    assert_locked(log_in(client, "viewer"), what="the account “viewer”")

    admin = Client()
    admin.force_login(personas["admin"])
    listing = admin.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and b"viewer" in listing.content and b"Locked Out" in listing.content
    assert admin.get("/admin/axes/accesslog/").status_code == 200
    assert admin.get("/admin/axes/accessfailurelog/").status_code == 200
    for attempt in AccessAttempt.objects.filter(username="viewer"):
        response = admin.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
        assert response.status_code == 302
    assert not AccessAttempt.objects.exists()

    assert log_in(client, "viewer").status_code == 302
    assert client.get("/").status_code == 200


def test_roles_other_than_admin_cannot_unlock(client, personas, limit):
    for _ in range(limit):
        fail(Client(), "viewer")
    attempt = AccessAttempt.objects.get(username="viewer")
    client.force_login(personas["approver"])  # not staff: no admin at all
    assert client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"}).status_code == 302
    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()


def test_the_admin_role_has_the_axes_permissions(personas):
    admin_group = set(Group.objects.get(name="admin").permissions.values_list("content_type__app_label", "codename"))
    expected = {"view_accessattempt", "delete_accessattempt", "view_accessfailurelog", "view_accesslog"}
    assert {("axes", codename) for codename in expected} <= admin_group
    assert all(personas["admin"].has_perm(f"axes.{codename}") for codename in expected)
    assert not personas["operator"].has_perm("axes.delete_accessattempt")


def test_axes_reset_and_its_command_unlock(client, personas, limit):
    from axes.utils import reset

    for _ in range(limit):
        fail(client, "viewer")
    assert reset(username="viewer") == 1  # one row: (viewer, 127.0.0.1, no user agent)
    assert log_in(client, "viewer").status_code == 302

    for _ in range(limit):
        fail(Client(), "operator")
    assert log_in(Client(), "operator").status_code == 429
    output = io.StringIO()
    call_command("axes_reset_username", "operator", stdout=output)
    assert output.getvalue().strip() == "1 attempts removed."
    assert log_in(Client(), "operator").status_code == 302


def test_a_lockout_is_audited_once(client, personas, limit):
    for _ in range(limit):
        fail(client, "viewer", address="192.0.2.20")
    events = list(AuditEvent.objects.filter(action="login-locked-out"))
    assert len(events) == 1
    event = events[0]
    assert (event.username, event.remote_addr) == ("viewer", "192.0.2.20")
    assert event.details["locked"] == ["username", "ip_address"] and event.details["limit"] == limit
    assert event.details["path"] == LOGIN and event.details["cooloff_seconds"] == 1800
    # every further refused attempt is counted by axes, not audited again
    fail(client, "viewer", address="192.0.2.20")
    log_in(client, "viewer", address="192.0.2.20")
    assert AuditEvent.objects.filter(action="login-locked-out").count() == 1
    # another username reaching the limit on its own is a new lockout
    for _ in range(limit):
        fail(Client(), "someone-else", address="192.0.2.21")
    assert list(AuditEvent.objects.filter(action="login-locked-out").values_list("username", flat=True)) == [
        "viewer",
        "someone-else",
    ]


def test_a_successful_login_clears_that_usernames_failures_only(client, personas, limit):
    address = "192.0.2.30"
    for _ in range(limit - 1):
        fail(client, "viewer", address=address)
    assert log_in(client, "viewer", address=address).status_code == 302
    assert not AccessAttempt.objects.filter(username="viewer").exists()

    # Someone with an account of their own cannot reset the address's count between guesses
    # at another account by logging in.
    attacker = Client()
    for _ in range(limit - 1):
        fail(attacker, "admin", address=address)
    assert log_in(attacker, "operator", address=address).status_code == 302
    assert AccessAttempt.objects.get(username="admin").failures_since_start == limit - 1
    assert fail(Client(), "admin", address=address).status_code == 429


def test_throttling_can_be_turned_off(client, personas, limit, settings):
    settings.AXES_ENABLED = False
    for _ in range(limit + 1):
        assert fail(client, "viewer").status_code == 200
    assert log_in(client, "viewer").status_code == 302
    assert not AccessAttempt.objects.exists()


def locked_attempt(username: str, address: str, failures: int) -> None:
    AccessAttempt.objects.create(username=username, ip_address=address, user_agent="<unknown>", http_accept="*/*",
                                 path_info=LOGIN, attempt_time=timezone.now(), get_data="", post_data="",
                                 failures_since_start=failures)  # fmt: skip


def test_the_lockout_answers_json_under_api(db, limit):
    """The API's lockout (its authentication is another module's) answers the API's error shape."""
    locked_attempt("script-user", "192.0.2.40", limit)
    request = RequestFactory().get("/api/groups/", REMOTE_ADDR="192.0.2.40")
    response = lockout_response(request, None, {"username": "script-user"})
    assert response.status_code == 429 and response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "1800"
    body = json.loads(response.content)
    assert set(body) == {"error", "status"} and body["status"] == 429
    assert "the account “script-user” and logins from your address are locked for 30 minutes" in body["error"]


def test_the_lockout_page_says_what_is_locked(db, limit):
    locked_attempt("mallory", "192.0.2.41", limit)
    from_elsewhere = RequestFactory().post(LOGIN, REMOTE_ADDR="192.0.2.42")
    response = lockout_response(from_elsewhere, None, {"username": "mallory"})
    html = response.content.decode()
    assert response.status_code == 429 and response["Content-Type"].startswith("text/html")
    assert "the account “mallory” is locked for 30 minutes" in html and "your address" not in html
    assert 'href="/login/">Back to the login page' in html


def test_durations_read_as_words():
    assert describe(dt.timedelta(minutes=30)) == "30 minutes"
    assert describe(dt.timedelta(hours=1)) == "1 hour"
    assert describe(dt.timedelta(minutes=90)) == "1 hour 30 minutes"
    assert describe(dt.timedelta(seconds=10)) == "1 minute"


@pytest.mark.parametrize(
    ("forwarded", "remote", "expected"),
    [
        ("198.51.100.7", "10.0.0.1", "198.51.100.7"),
        ("203.0.113.9, 198.51.100.7", "10.0.0.1", "198.51.100.7"),  # the client wrote the first entry
        ("", "10.0.0.1", "10.0.0.1"),
        ("not-an-address", "10.0.0.1", "10.0.0.1"),
        ("2001:db8::1", "10.0.0.1", "2001:db8::1"),
    ],
)
def test_the_client_address_behind_one_proxy_is_the_last_forwarded_entry(forwarded, remote, expected):
    request = RequestFactory().get(LOGIN, REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip_behind_one_proxy(request) == expected
