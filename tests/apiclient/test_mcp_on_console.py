"""The MCP server driven by the SDK's own client, over stdio and over streamable HTTP, as
`rocketmq-console mcp` subprocesses against a live console polling the real cluster: a token
scoped to payments-* sees only those groups through every tool; a proposed reset is a pending
request that an approver approves in Chromium and that then runs (mqadmin agrees); a read-only
token's proposal is refused; no tool, whatever its arguments, decides anything."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from consumers.apiclient.http import TOKEN_VARIABLE, URL_VARIABLE
from consumers.audit.models import AuditEvent
from consumers.changes.models import ChangeRequest, State
from consumers.identity import Rule, create_token
from consumers.live.poll import poll_cluster
from devstack.mqadmin import parse_consumer_progress
from devstack.processes import free_port
from tests.conftest import in_thread
from tests.support.scenarios import offline_group
from tests.test_browser import log_in, submit

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def stdio(url: str, token: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "dashboard.cli", "mcp"], cwd=str(ROOT),
                                 env={URL_VARIABLE: url, TOKEN_VARIABLE: token})  # fmt: skip


def talk(server, work):
    """Run `work(client)` with a connected SDK client, in a thread of its own (the browser's
    Playwright owns this one's event loop)."""

    async def main():
        async with Client(server, read_timeout_seconds=90) as client:
            return await work(client)

    return in_thread(anyio.run, main)


def arguments_for(schema: dict, fill: dict) -> dict:
    """Every argument a tool takes, from its schema, with the values of `fill` (a change's id
    wherever an id goes): what a model trying to make a tool decide would send."""
    return {name: fill[name] for name in schema["properties"] if name in fill}


def test_an_agent_sees_its_scope_proposes_a_reset_and_an_approver_lets_it_run(
    browser, page, live_server, polled, personas, mqadmin, namesrv, traffic, names, create_topic, monkeypatch
):
    from consumers.changes import tasks

    topic = create_topic(names.topic("mcp"))
    ours, theirs = f"payments-{names.group('mcp')}", f"orders-{names.group('mcp')}"
    sent = traffic.produce(topic, 16).sent
    for group in (ours, theirs):
        offline_group(mqadmin, namesrv, group, {(topic, m.broker, m.queue_id): 0 for m in sent})
    in_thread(poll_cluster, polled)
    queued = []
    monkeypatch.setattr(tasks.execute_change, "delay", queued.append)  # the test plays the worker
    rule = Rule("operator", ("local",), ("payments-*",), (topic,))  # and the messages of its topic
    made, agent = create_token(personas["operator"], name="agent", days=None, rule=rule)
    reader = create_token(personas["operator"], name="reader", days=None, rule=Rule("viewer"))[1]
    server = stdio(live_server.url, agent)

    async def look_and_propose(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = await client.call_tool("list_groups", {"cluster": "local", "limit": 1000})
        mine = await client.call_tool("get_group", {"cluster": "local", "group": ours})
        other = await client.call_tool("get_group", {"cluster": "local", "group": theirs})
        preview = await client.call_tool("preview_reset", {"cluster": "local", "group": ours, "strategy": "latest"})
        hidden_preview = await client.call_tool("preview_reset", {"cluster": "local", "group": theirs,
                                                                  "strategy": "latest"})  # fmt: skip
        hidden_propose = await client.call_tool("propose_reset", {"cluster": "local", "group": theirs,
                                                                   "strategy": "latest", "reason": "r"})  # fmt: skip
        reason = "16 messages of a load test; skip them"
        proposed = await client.call_tool("propose_reset", {"cluster": "local", "group": ours, "strategy": "latest",
                                                            "reason": reason})  # fmt: skip
        return tools, listed, mine, other, preview, hidden_preview, hidden_propose, proposed

    tools, listed, mine, other, preview, hidden_preview, hidden_propose, proposed = talk(server, look_and_propose)
    groups = [g["group"] for g in listed.structured_content["groups"]]
    assert ours in groups and all(g.startswith("payments-") for g in groups)
    assert mine.structured_content["group"] == ours and mine.structured_content["lag"] == 16
    assert other.is_error and "(404)" in other.content[0].text and theirs in other.content[0].text
    assert sum(r["delta"] for r in preview.structured_content["plan"]["rows"]) == 16
    assert hidden_preview.is_error and hidden_propose.is_error
    assert not proposed.is_error, proposed.content[0].text
    change = proposed.structured_content
    assert change["state"] == "pending" and change["group"] == ours and change["requested_by"] == "operator"
    request_event = AuditEvent.objects.get(change_request_id=change["id"], action="request")
    assert request_event.details["api"]["client"].startswith("mcp/")
    assert request_event.details["api"]["token"] == made.prefix
    calls = AuditEvent.objects.filter(action="api-call", details__api__client__startswith="mcp/")
    assert calls.count() == 7 and {e.username for e in calls} == {"operator"}

    # every tool, with every argument it takes aimed at the pending request: none decides it
    fill = {"cluster": "local", "group": ours, "change_id": change["id"], "strategy": "latest", "reason": "try",
            "topic": topic, "broker": sent[0].broker, "queue_id": sent[0].queue_id, "offset": 0, "by": "id",
            "msg_id": "0" * 32, "target": "group", "consume_enable": True, "state": "pending"}  # fmt: skip

    async def every_tool(client, fill):
        return {name: await client.call_tool(name, arguments_for(t.input_schema, fill)) for name, t in tools.items()}

    talk(server, lambda client: every_tool(client, fill))
    assert ChangeRequest.objects.get(pk=change["id"]).state == State.PENDING
    assert not ChangeRequest.objects.exclude(state=State.PENDING).filter(group=ours).exists()
    assert not AuditEvent.objects.filter(action__in=("approve", "approve-part", "reject", "cancel")).exists()
    assert queued == []

    # every tool aimed at the group out of the token's scope: refused, or nothing of it in the answer
    # (track_message's message is on a topic both groups read)
    answers = talk(server, lambda client: every_tool(client, {**fill, "group": theirs}))
    shown = {name: r.structured_content for name, r in answers.items() if not r.is_error}
    assert {"list_groups", "track_message", "list_changes"} <= set(shown)
    assert [name for name, data in shown.items() if theirs in json.dumps(data)] == []
    assert ours in json.dumps(shown["track_message"])
    assert not ChangeRequest.objects.filter(group=theirs).exists()

    # the command line: its --json is the API's, and its tables show the same rows
    cli = [sys.executable, "-m", "dashboard.cli", "api"]
    env = {"PATH": "/usr/bin:/bin", URL_VARIABLE: live_server.url, TOKEN_VARIABLE: agent}
    at = [topic, sent[0].broker, str(sent[0].queue_id), str(sent[0].queue_offset)]
    preview_json = json.loads(subprocess.run([*cli, "--json", "preview", "local", ours, "--strategy", "latest"],
                                             env=env, cwd=ROOT, capture_output=True, text=True).stdout)  # fmt: skip
    assert preview_json["plan"]["rows"] == preview.structured_content["plan"]["rows"]
    table = subprocess.run([*cli, "preview", "local", ours, "--strategy", "latest"], env=env, cwd=ROOT,
                           capture_output=True, text=True).stdout.splitlines()  # fmt: skip
    assert table[0].split() == ["queue", "committed", "new", "moves", "note"]
    rows = {line.split()[0]: [None if v == "?" else int(v) for v in line.split()[1:4]] for line in table[1:]}
    assert rows == {r["label"]: [r["current"], r["target"], r["delta"]] for r in preview_json["plan"]["rows"]}
    tracked = subprocess.run([*cli, "track", "local", *at], env=env, cwd=ROOT, capture_output=True, text=True)
    verdicts = {line.split()[0]: line.split()[1] for line in tracked.stdout.splitlines()[1:]}
    track_json = shown["track_message"]
    assert verdicts == {g["group"]: g["verdict"] for g in track_json["groups"]} and ours in verdicts

    # a person approves it in the browser, and it runs
    log_in(page, live_server.url, "approver", f"/changes/{change['id']}/")
    submit(page, "#approve")
    assert queued == [change["id"]]
    in_thread(tasks.execute_change.run, change["id"])
    assert ChangeRequest.objects.get(pk=change["id"]).state == State.DONE
    progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", ours).out)
    ends = {(m.broker, m.queue_id): m.queue_offset + 1 for m in sent}
    for row in progress.rows:
        if row.topic == topic and (row.broker, row.queue_id) in ends:
            assert row.consumer_offset >= ends[(row.broker, row.queue_id)]
    done = talk(server, lambda c: c.call_tool("get_change", {"change_id": change["id"]}))
    assert done.structured_content["state"] == "done"

    # a read-only token's proposal: the API's refusal, as a tool error
    refused = talk(stdio(live_server.url, reader), lambda c: c.call_tool("propose_reset", {
        "cluster": "local", "group": ours, "strategy": "earliest", "reason": "replay"}))  # fmt: skip
    assert refused.is_error and "(403)" in refused.content[0].text
    assert ChangeRequest.objects.filter(group=ours).count() == ChangeRequest.objects.filter(
        group=ours, requested_by=personas["operator"]).count()  # fmt: skip

    # the same server over streamable HTTP
    port = free_port()
    command = [sys.executable, "-m", "dashboard.cli", "mcp", "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env={"PATH": "/usr/bin:/bin", URL_VARIABLE: live_server.url,
                                              TOKEN_VARIABLE: agent}, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)

        async def over_http(client):
            listed = await client.call_tool("list_groups", {"cluster": "local", "limit": 1000})
            return [t.name for t in (await client.list_tools()).tools], listed

        names_over_http, listed = talk(f"http://127.0.0.1:{port}/mcp", over_http)
        assert names_over_http == list(tools)
        assert [g["group"] for g in listed.structured_content["groups"]] == groups
    finally:
        process.terminate()
        process.wait(timeout=20)
