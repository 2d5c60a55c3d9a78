"""Local receivers that count what the console sends: an HTTP endpoint (webhooks, Slack,
Alertmanager's own webhook) and an SMTP server (aiosmtpd), both on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

from devstack.processes import free_port


class HttpReceiver:
    """Records every POST (path, headers, raw body); answers `status`. stop() and start()
    again on the same port: a receiver that is down, then back."""

    def __init__(self, status: int = 200):
        self.port, self.status, self.requests = free_port(), status, []
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.server = None
        self.start()

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:  # shutdown() of a server not serving would wait forever
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def json(self) -> list:
        return [json.loads(r["body"]) for r in self.requests]


class SmtpReceiver:
    """Records every message (recipients, raw data). Addresses in `refuse` are refused at RCPT
    (550), as a server refuses an unknown mailbox; remove them and they are taken again."""

    def __init__(self):
        self.messages, self.refuse = [], set()
        receiver = self

        class Handler:
            async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
                if address in receiver.refuse:
                    return "550 no such mailbox"
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, server, session, envelope):
                receiver.messages.append({"to": envelope.rcpt_tos, "data": envelope.content.decode()})
                return "250 OK"

        self.controller = Controller(Handler(), hostname="127.0.0.1", port=free_port())
        self.controller.start()
        self.port = self.controller.port

    def stop(self) -> None:
        self.controller.stop()
