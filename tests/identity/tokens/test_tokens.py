"""API tokens: made, listed and revoked by their user on a page, shown once, stored as a hash,
expiring, recording their last use, audited."""

from __future__ import annotations

import datetime as dt
import hashlib
import re

from axes.models import AccessAttempt
from django.utils import timezone

from consumers.audit.models import AuditEvent
from consumers.identity import ApiToken


def _create(client, name="nightly export", days="30") -> str:
    page = client.post("/account/tokens/new/", {"name": name, "days": days})
    assert page.status_code == 200
    return re.search(r'id="new-token">.*?<code>(rmqc_[^<]+)</code>', page.content.decode()).group(1)


def _api(client, secret: str):
    return client.get("/api/clusters/", HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_a_token_is_shown_once_stored_hashed_and_works(client, personas, redis):
    client.force_login(personas["viewer"])
    secret = _create(client)
    token = ApiToken.objects.get()
    assert token.digest == hashlib.sha256(secret.encode()).hexdigest() and secret not in str(token.__dict__)
    assert secret.startswith(f"rmqc_{token.prefix}_") and len(secret) > 40
    assert 29 <= (token.expires_at - timezone.now()).days <= 30
    listing = client.get("/account/tokens/").content.decode()
    assert "nightly export" in listing and token.prefix in listing and secret not in listing
    client.logout()
    assert _api(client, secret).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None and token.last_used_from == "127.0.0.1"
    assert list(AuditEvent.objects.values_list("action", "username")) == [("api-token-create", "viewer")]


def test_revoked_expired_and_forged_tokens_are_refused(client, personas, redis, settings):
    settings.AXES_FAILURE_LIMIT = 10  # five refusals in a row here; the lockout is tested below
    client.force_login(personas["operator"])
    revoked, expired, kept = _create(client, "a"), _create(client, "b", days=""), _create(client, "c")
    assert ApiToken.objects.get(name="b").expires_at is None  # empty: never expires
    ApiToken.objects.filter(name="b").update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert client.post(f"/account/tokens/{ApiToken.objects.get(name='a').pk}/revoke/").status_code == 302
    assert "revoked" in client.get("/account/tokens/").content.decode()
    client.logout()
    for secret in (revoked, expired, kept[:-1] + ("A" if kept[-1] != "A" else "B"), "rmqc_", "not-a-token"):
        response = _api(client, secret)
        assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer"), secret
    assert _api(client, kept).status_code == 200
    actions = list(AuditEvent.objects.values_list("action", flat=True))
    assert actions.count("api-token-create") == 3 and actions.count("api-token-revoke") == 1


def test_nobody_revokes_or_sees_another_users_token(client, personas, redis):
    client.force_login(personas["viewer"])
    secret = _create(client, "viewer's script")
    client.force_login(personas["admin"])
    assert "viewer&#x27;s script" not in client.get("/account/tokens/").content.decode()
    client.post(f"/account/tokens/{ApiToken.objects.get().pk}/revoke/")
    assert ApiToken.objects.get().revoked_at is None
    client.logout()
    assert _api(client, secret).status_code == 200


def test_a_bad_token_form_is_a_400_and_makes_nothing(client, personas, redis):
    client.force_login(personas["viewer"])
    for data in ({"name": "", "days": "1"}, {"name": "x", "days": "0"}, {"name": "x", "days": "true"}):
        assert client.post("/account/tokens/new/", data).status_code == 400
    assert not ApiToken.objects.exists()


def _from(client, secret: str, address: str):
    return client.get("/api/clusters/", HTTP_AUTHORIZATION=f"Bearer {secret}", REMOTE_ADDR=address)


def test_a_revoked_token_in_a_loop_locks_only_itself_from_its_address_never_password_logins(
    client, personas, redis, settings
):
    """One cron job with a revoked token behind an office's NAT: its refusals lock that token's
    prefix from that address, and nothing else: not password logins from the address (they
    were locked for 30 minutes before), not the other tokens from it, not the prefix elsewhere."""
    from tests.conftest import PASSWORD

    settings.AXES_FAILURE_LIMIT = 5
    client.force_login(personas["operator"])
    revoked, other = _create(client, "old cron"), _create(client, "new cron")
    client.post(f"/account/tokens/{ApiToken.objects.get(name='old cron').pk}/revoke/")
    client.logout()
    office = "10.1.1.1"
    answers = [_from(client, revoked, office).status_code for _ in range(settings.AXES_FAILURE_LIMIT + 2)]
    assert answers == [401] * (settings.AXES_FAILURE_LIMIT - 1) + [429] * 3
    locked = _from(client, revoked, office)
    assert 0 < int(locked["Retry-After"]) <= 1800 and "password logins are not affected" in locked.json()["error"]
    assert _from(client, other, office).status_code == 200  # another token from the same address
    assert _from(client, revoked, "10.2.2.2").status_code == 401  # the same prefix elsewhere: refused, not locked
    login = client.post("/login/", {"username": "viewer", "password": PASSWORD}, REMOTE_ADDR=office)
    assert login.status_code == 302 and client.session.get("_auth_user_id")  # passwords from the office still work
    assert AuditEvent.objects.filter(action="api-token-locked-out", remote_addr=office).count() == 1


def test_made_up_prefixes_share_one_count_per_address_and_a_good_token_still_works(client, personas, redis, settings):
    """A guesser gains nothing by inventing prefixes (they are one bucket per address); a real
    token from that address is another bucket."""
    settings.AXES_FAILURE_LIMIT = 5
    client.force_login(personas["viewer"])
    good = _create(client)
    client.logout()
    answers = [_api(client, f"rmqc_{n:08x}_guess").status_code for n in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert answers == [401] * (settings.AXES_FAILURE_LIMIT - 1) + [429] * 2
    assert _api(client, good).status_code == 200


def test_wrong_tokens_with_someone_elses_prefix_lock_only_the_guessing_address(client, personas, redis, settings):
    """Prefixes are public (the audit log shows them): wrong tokens sent with another user's
    prefix from one address lock that prefix at that address only; there even the right token
    is answered 429 (the answer must not tell a guesser they found it). Deleting the row, as
    the admin does, unlocks."""
    from consumers.identity import TokenFailure

    client.force_login(personas["operator"])
    theirs = _create(client, "their script")
    client.logout()
    prefix = theirs.split("_")[1]
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _from(client, f"rmqc_{prefix}_wrong", "10.9.9.9")
    assert _from(client, theirs, "10.9.9.9").status_code == 429
    assert _api(client, theirs).status_code == 200  # the script, from its own address, is not locked
    assert not AccessAttempt.objects.exists()  # nothing counted against password logins
    assert TokenFailure.objects.filter(prefix=prefix, address="10.9.9.9").delete()[0] == 1
    assert _from(client, theirs, "10.9.9.9").status_code == 200


def test_a_token_accepted_clears_its_count(client, personas, redis, settings):
    from consumers.identity import TokenFailure

    client.force_login(personas["viewer"])
    good = _create(client)
    client.logout()
    _api(client, good[:-1] + ("A" if good[-1] != "A" else "B"))
    assert TokenFailure.objects.get().failures == 1
    assert _api(client, good).status_code == 200 and not TokenFailure.objects.exists()
