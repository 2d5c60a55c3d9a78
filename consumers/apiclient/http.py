"""One API connection: the console's URL and a token, from arguments, the environment or a file.

Every request says which client sent it (the X-Console-Client header), so the audit log can tell
an agent's or a script's calls from other token calls."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import requests

URL_VARIABLE = "ROCKETMQ_CONSOLE_URL"
TOKEN_VARIABLE = "ROCKETMQ_CONSOLE_TOKEN"
TOKEN_FILE_VARIABLE = "ROCKETMQ_CONSOLE_TOKEN_FILE"
CLIENT_HEADER = "X-Console-Client"  # what consumers/identity/access.py reads
TIMEOUT_SECONDS = 60  # a reset preview reads every broker of the group


class ApiError(Exception):
    """The console answered with an error: its status and its own message (the JSON body)."""

    def __init__(self, status: int, message: str, body: dict | None = None):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body or {}


class ConsoleUnreachable(Exception):
    """No answer from the console at all (refused, timed out, not HTTP)."""


class NotConfigured(Exception):
    """No URL or no token was given."""


@dataclass(frozen=True)
class Connection:
    url: str
    token: str
    client: str  # "mcp/<version>" or "cli/<version>"

    @classmethod
    def configured(cls, client: str, *, url: str = "", token_file: str = "", environ=None) -> Connection:
        """From the arguments first, then the environment: the URL, and the token itself or a file
        holding it (a file keeps it out of process listings and shell history)."""
        environ = os.environ if environ is None else environ
        url = url or environ.get(URL_VARIABLE, "")
        if not url:
            raise NotConfigured(f"no console URL: pass --url or set {URL_VARIABLE}")
        path = token_file or environ.get(TOKEN_FILE_VARIABLE, "")
        token = environ.get(TOKEN_VARIABLE, "")
        if path:
            try:
                token = Path(path).read_text().strip()
            except OSError as exc:
                raise NotConfigured(f"the token file {path} cannot be read: {exc.strerror}") from exc
        if not token:
            raise NotConfigured(f"no API token: set {TOKEN_VARIABLE} or {TOKEN_FILE_VARIABLE} (or pass --token-file)")
        return cls(url.rstrip("/"), token, client)

    def get(self, path: str, params: dict | None = None) -> dict:
        return self._call("GET", path, params={k: v for k, v in (params or {}).items() if v not in (None, "")})

    def post(self, path: str, body: dict) -> dict:
        return self._call("POST", path, json=body)

    def _call(self, method: str, path: str, **kwargs) -> dict:
        headers = {"Authorization": f"Bearer {self.token}", CLIENT_HEADER: self.client, "Accept": "application/json"}
        try:
            response = requests.request(method, self.url + path, headers=headers, timeout=TIMEOUT_SECONDS, **kwargs)
        except requests.RequestException as exc:
            raise ConsoleUnreachable(f"the console at {self.url} did not answer: {type(exc).__name__}") from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ConsoleUnreachable(f"the console at {self.url} answered {response.status_code} without JSON")
        if response.status_code >= 400:
            raise ApiError(response.status_code, str(body.get("error", "")), body)
        return body


def segment(value: str) -> str:
    """One path segment of a URL (a group may hold %, a topic %RETRY%...)."""
    return quote(str(value), safe="")
