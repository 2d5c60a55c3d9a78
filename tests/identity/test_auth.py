"""Login, logout, roles from the migration, the create_user command."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from consumers.identity import ROLE_PERMISSIONS
from tests.conftest import PASSWORD


def test_the_migration_creates_each_role_with_its_permissions(db):
    for role, codenames in ROLE_PERMISSIONS.items():
        assert sorted(Group.objects.get(name=role).permissions.values_list("codename", flat=True)) == sorted(codenames)


def test_login_then_logout(client, personas):
    page = client.get("/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    bad = client.post("/login/", {"username": "viewer", "password": "nope"})
    assert b"did not match" in bad.content
    response = client.post("/login/", {"username": "viewer", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_the_header_names_the_users_role(client, personas, redis):
    client.force_login(personas["approver"])
    assert b"approver" in client.get("/").content


def test_create_user_gives_exactly_one_role(db, monkeypatch, capsys):
    monkeypatch.setenv("NEW_PASSWORD", PASSWORD)
    call_command("create_user", "olga", "--role", "operator", "--password-env", "NEW_PASSWORD")
    from django.contrib.auth import get_user_model

    olga = get_user_model().objects.get(username="olga")
    assert list(olga.groups.values_list("name", flat=True)) == ["operator"] and not olga.is_staff
    call_command("create_user", "olga", "--role", "admin", "--update")
    olga.refresh_from_db()
    assert list(olga.groups.values_list("name", flat=True)) == ["admin"] and olga.is_staff
    assert olga.check_password(PASSWORD)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--role", "viewer", "--password-env", "WEAK"], "too short"),
        (["--role", "viewer", "--password-env", "UNSET_VARIABLE"], "empty or unset"),
    ],
)
def test_create_user_refuses_bad_input_and_creates_nothing(db, monkeypatch, args, message):
    monkeypatch.setenv("WEAK", "abc")
    with pytest.raises(CommandError, match=message):
        call_command("create_user", "vic", *args)
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="vic").exists()
