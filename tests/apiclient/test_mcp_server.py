"""The MCP server's own rules, in process, against a stand-in console that records what reaches
it: the tools are the documented ones, arguments outside a tool's schema are refused before any
call, the console's refusals and absence are tool errors, and no tool approves, runs or cancels.
tests/apiclient/test_mcp_on_console.py drives it over stdio and HTTP against the real console."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from mcp import Client

from consumers.apiclient import mcp_server
from consumers.apiclient.http import Connection

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented_tools() -> dict[str, str]:
    """docs/api.md's MCP tools table: name -> read or propose."""
    section = DOCS.read_text().split("### MCP tools", 1)[1].split("\n### ", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| (read|propose) \|", section, flags=re.M))


class StandIn(BaseHTTPRequestHandler):
    """Answers every GET with {"ok": true} and every POST with the API's refusal of a read-only
    token, and keeps what it was sent."""

    seen: list = []

    def _answer(self, status: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.seen.append(("GET", self.path, dict(self.headers)))
        self._answer(200, {"ok": True, "path": self.path})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.seen.append(("POST", self.path, json.loads(self.rfile.read(length))))
        self._answer(403, {"error": "requesting a reset needs the operator role", "status": 403})

    def log_message(self, *args):
        pass


@pytest.fixture
def console():
    StandIn.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def talk(url: str, work):
    async def main():
        async with Client(mcp_server.build(Connection(url, "rmqc_abcd1234_x", "mcp/test"))) as client:
            return await work(client)

    return anyio.run(main)


def test_the_tools_are_the_documented_ones_and_none_decides(console):
    tools = talk(console, lambda c: c.list_tools()).tools
    documented = documented_tools()
    assert {t.name: ("propose" if t.name.startswith("propose_") else "read") for t in tools} == documented
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.annotations.read_only_hint is (documented[tool.name] == "read"), tool.name
        assert not re.search(r"approve|reject|run|cancel|undo|pause|resume", tool.name), tool.name
    propose = next(t for t in tools if t.name == "propose_reset").input_schema
    assert set(propose["required"]) == {"cluster", "group", "strategy", "reason"}


def test_arguments_outside_the_schema_are_refused_before_any_call(console):
    async def work(client):
        return [
            await client.call_tool("list_groups", {"bogus": 1}),
            await client.call_tool("list_groups", {"limit": 0}),
            await client.call_tool("get_change", {"change_id": "seven"}),
            await client.call_tool("propose_reset", {"cluster": "c", "group": "g", "strategy": "latest"}),
            await client.call_tool(
                "propose_reset", {"cluster": "c", "group": "g", "strategy": "latest", "reason": "r", "reasn": "typo"}
            ),  # fmt: skip
            await client.call_tool("propose_config_change", {"cluster": "c", "group": "g", "reason": "r"}),
        ]

    results = talk(console, work)
    assert all(r.is_error for r in results)
    assert "unknown argument(s) bogus for list_groups" in results[0].content[0].text
    assert "reasn" in results[4].content[0].text and "nothing to change" in results[5].content[0].text
    assert StandIn.seen == []


def test_calls_carry_the_token_and_say_they_are_the_mcp_servers(console):
    result = talk(console, lambda c: c.call_tool("get_group", {"cluster": "local", "group": "a b%"}))
    assert not result.is_error and result.structured_content["path"] == "/api/groups/local/a%20b%25/"
    method, path, headers = StandIn.seen[0]
    assert headers["Authorization"] == "Bearer rmqc_abcd1234_x" and headers["X-Console-Client"] == "mcp/test"


def test_a_refusal_is_the_apis_own_and_a_redrive_asks_an_approver_whatever_its_size(console):
    result = talk(console, lambda c: c.call_tool("propose_redrive", {"cluster": "c", "group": "g", "target": "group",
                                                                     "reason": "after the fix"}))  # fmt: skip
    assert result.is_error
    assert result.content[0].text.endswith("the console refused (403): requesting a reset needs the operator role")
    assert StandIn.seen == [("POST", "/api/dlq/c/g/redrive/", {"target": "group", "target_topic": "",
                             "reason": "after the fix", "selection": {}, "ask_approver": True})]  # fmt: skip


def test_a_console_that_is_down_is_a_tool_error_naming_it():
    result = talk("http://127.0.0.1:9", lambda c: c.call_tool("list_clusters", {}))
    assert result.is_error and "the console at http://127.0.0.1:9 did not answer" in result.content[0].text
