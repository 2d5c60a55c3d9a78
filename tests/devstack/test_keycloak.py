"""devstack/keycloak.py without starting Keycloak: the realm file says what the console relies
on, and unpacking keeps kc.sh executable (the tests marked `keycloak` start the real one)."""

from __future__ import annotations

import stat
import zipfile

from devstack.keycloak import _unzip, console_client, realm, realm_users


def test_the_realm_has_the_teams_the_users_and_the_consoles_client():
    data = realm()
    assert {g["name"] for g in data["groups"]} == {"payments", "orders"}
    users = realm_users(data)
    assert {name: user["groups"] for name, user in users.items()} == {
        "alice": ["/payments"], "bob": ["/orders"], "carol": []}  # fmt: skip
    client = console_client(data)
    assert not client["publicClient"] and client["secret"] and client["standardFlowEnabled"]
    assert not client["implicitFlowEnabled"] and not client["directAccessGrantsEnabled"]
    assert client["attributes"]["pkce.code.challenge.method"] == "S256"
    assert client["redirectUris"] == ["http://127.0.0.1:*"]  # this machine only
    assert client["attributes"]["post.logout.redirect.uris"] == "http://127.0.0.1:*"
    mapper = next(m for m in client["protocolMappers"] if m["protocolMapper"] == "oidc-group-membership-mapper")
    assert mapper["config"]["claim.name"] == "groups" and mapper["config"]["id.token.claim"] == "true"


def test_unzipping_keeps_the_files_modes(tmp_path):
    archive = tmp_path / "dist.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        script = zipfile.ZipInfo("keycloak/bin/kc.sh")
        script.external_attr = (stat.S_IFREG | 0o755) << 16
        zipped.writestr(script, "#!/bin/sh\n")
        zipped.writestr("keycloak/conf/keycloak.conf", "")
    _unzip(archive, tmp_path / "out")
    assert (tmp_path / "out/keycloak/bin/kc.sh").stat().st_mode & 0o777 == 0o755
    assert not (tmp_path / "out/keycloak/conf/keycloak.conf").stat().st_mode & 0o111
