"""A byte-level fake server for fault injection: it decodes requests and lets each test
decide what bytes to send back (or not), when, and whether to close the connection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from consumers.rocketmq.frame import FrameDecoder, RemotingCommand
from tests.support.wire import json_frame

Handler = Callable[["FakeBroker", RemotingCommand, asyncio.StreamWriter], Awaitable[None]]


def response_frame(request: RemotingCommand, *, code: int = 0, remark: str | None = None, ext=None, body=b"") -> bytes:
    header = {"code": code, "flag": 1, "language": "JAVA", "opaque": request.opaque, "version": 479}
    if remark is not None:
        header["remark"] = remark
    if ext:
        header["extFields"] = ext
    return json_frame(json.dumps(header).encode(), body)


async def answer_success(broker: FakeBroker, request: RemotingCommand, writer: asyncio.StreamWriter) -> None:
    writer.write(response_frame(request, body=b'{"ok":true}'))


class FakeBroker:
    def __init__(self, handler: Handler = answer_success):
        self.handler = handler
        self.requests: list[RemotingCommand] = []
        self.replies_from_client: list[RemotingCommand] = []
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self, port: int = 0) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        for writer in self._writers:
            writer.close()
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for command in decoder.feed(data):
                    if command.is_response:
                        self.replies_from_client.append(command)
                        continue
                    self.requests.append(command)
                    asyncio.ensure_future(self._handle(command, writer))
        except (ConnectionError, asyncio.CancelledError):
            pass

    async def _handle(self, command: RemotingCommand, writer: asyncio.StreamWriter) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self.handler(self, command, writer)
        finally:
            self.in_flight -= 1
