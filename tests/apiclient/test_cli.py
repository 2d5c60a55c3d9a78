"""`rocketmq-console api ...` (consumers/apiclient/cli.py) as a subprocess against a live console
holding tests/support/world.py's world: its --json is the API's JSON for the same call, its tables
show the same rows, a scoped token sees only its groups, and every call is in the audit log as
the command line's, with the token that made it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from consumers.apiclient.http import TOKEN_FILE_VARIABLE, TOKEN_VARIABLE, URL_VARIABLE
from consumers.audit.models import AuditEvent
from consumers.identity import Rule, create_token
from tests.support.world import build

ROOT = Path(__file__).resolve().parents[2]
# transactional: the live server answers from another thread (personas recreates the role groups)
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(redis, history_dir, personas):
    return build(redis, personas)


def cli(url: str, token: str, *argv: str, token_file: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETMQ_CONSOLE_")}
    env.update({URL_VARIABLE: url, TOKEN_VARIABLE: token} if url else {})
    if token_file:
        env[TOKEN_FILE_VARIABLE] = token_file
    return subprocess.run([sys.executable, "-m", "dashboard.cli", "api", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def api(url: str, token: str, path: str) -> dict:
    response = requests.get(url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def without_ages(data):
    """The ages count seconds since the world was published, so two reads a moment apart differ
    in them and in nothing else."""
    if isinstance(data, dict):
        return {k: without_ages(v) for k, v in data.items() if not k.endswith("age_seconds") and k != "age"}
    if isinstance(data, list):
        return [without_ages(v) for v in data]
    return data


def test_json_is_the_apis_and_the_tables_show_its_rows(live_server, world, personas):
    token, secret = create_token(personas["operator"], name="script", days=None)
    url = live_server.url

    listed = cli(url, secret, "--json", "groups")
    assert listed.returncode == 0, listed.stderr
    assert without_ages(json.loads(listed.stdout)) == without_ages(api(url, secret, "/api/groups/"))

    one = cli(url, secret, "--json", "group", "east", "orders")
    assert without_ages(json.loads(one.stdout)) == without_ages(api(url, secret, "/api/groups/east/orders/"))

    status = cli(url, secret, "--json", "status", str(world.pending.pk))
    assert json.loads(status.stdout) == api(url, secret, f"/api/changes/{world.pending.pk}/")

    table = cli(url, secret, "groups").stdout.splitlines()
    assert table[0].split() == ["cluster", "group", "health", "lag", "lag", "s", "clients"]
    rows = {line.split()[1]: line.split() for line in table[1:-1]}
    assert set(rows) == {"orders", "audit", "fanout", "payments", "popper"} and table[-1] == "5 group(s)"
    expected = {g["group"]: g for g in api(url, secret, "/api/groups/")["groups"]}
    for name, cells in rows.items():
        assert cells[0] == "east" and cells[2] == expected[name]["health"]["state"]
        assert cells[3] == str(expected[name]["lag"])  # orders: 40, as the world published it
    assert rows["orders"][3] == "40"

    shown = cli(url, secret, "status", str(world.pending.pk)).stdout
    assert {"state", "pending", "reset", "operator"} <= set(shown.split())

    events = AuditEvent.objects.filter(action="api-call").order_by("id")
    assert [(e.details["call"], e.cluster, e.group) for e in events] == [
        ("api-groups", "", ""),
        ("api-group", "east", "orders"),
        ("api-change", "", ""),
        ("api-groups", "", ""),
        ("api-change", "", ""),
    ]
    prefix = token.prefix
    assert all(e.username == "operator" and e.details["status"] == 200 for e in events)
    assert all(e.details["api"]["token"] == prefix and e.details["api"]["client"].startswith("cli/") for e in events)


def test_a_scoped_token_sees_its_groups_only_and_refusals_are_the_apis(live_server, world, personas, tmp_path):
    rule = Rule("viewer", ("east",), ("pay*",))
    secret = create_token(personas["operator"], name="payments", days=None, rule=rule)[1]
    holder = tmp_path / "token"
    holder.write_text(secret + "\n")

    listed = cli(live_server.url, "", "--json", "--url", live_server.url, "groups", token_file=str(holder))
    assert [g["group"] for g in json.loads(listed.stdout)["groups"]] == ["payments"]
    hidden = cli(live_server.url, secret, "group", "east", "orders")
    assert hidden.returncode == 1 and "refused (404)" in hidden.stderr and hidden.stdout == ""

    # a viewer's token proposing: the API's 403, printed as the API said it
    proposed = cli(live_server.url, secret, "--json", "propose", "east", "payments", "--strategy", "latest",
                   "--reason", "try")  # fmt: skip
    assert proposed.returncode == 1 and json.loads(proposed.stdout)["status"] == 403
    assert "refused (403)" in proposed.stderr


def test_no_console_or_no_token_is_one_line_naming_it(tmp_path):
    down = cli("http://127.0.0.1:9", "rmqc_x", "groups")
    assert down.returncode == 1 and "the console at http://127.0.0.1:9 did not answer" in down.stderr
    unset = cli("", "", "groups")
    assert unset.returncode == 2 and "no console URL" in unset.stderr
    missing = cli("http://127.0.0.1:9", "", "groups", token_file=str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "cannot be read" in missing.stderr
    bad = cli("http://127.0.0.1:9", "rmqc_x", "preview", "c", "g", "--strategy", "exact", "--offset", "x")
    assert bad.returncode == 1 and "expected TOPIC@BROKER#QUEUE=N" in bad.stderr
