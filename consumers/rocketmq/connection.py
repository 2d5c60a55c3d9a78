"""One TCP connection to a name server or broker, with many requests in flight.

Responses are matched by opaque and the response bit. Requests the server sends us on the
same socket (offset resets, running-info calls meant for consumers) are answered with
REQUEST_CODE_NOT_SUPPORTED, or ignored when oneway, and the connection carries on.
"""

from __future__ import annotations

import asyncio
import logging

from .codes import ResponseCode
from .errors import ConnectionClosed, ProtocolError, RequestTimeout
from .frame import FLAG_RESPONSE, MAX_FRAME, FrameDecoder, RemotingCommand, encode

log = logging.getLogger(__name__)

SWEEP_INTERVAL = 0.05  # how often pending requests are checked for their timeout (seconds)


class Connection(asyncio.Protocol):
    def __init__(self, address: str, *, max_frame: int = MAX_FRAME):
        self.address = address
        self.max_frame = max_frame
        self._decoder = FrameDecoder(max_frame)
        # opaque -> (future, loop time at which it times out, its timeout)
        self._pending: dict[int, tuple[asyncio.Future, float, float]] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._outgoing: list[bytes] = []  # frames written in this loop iteration, sent together
        self.closed = False
        self.close_reason: Exception | None = None
        self.last_used = self._loop.time()

    # asyncio.Protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            commands = self._decoder.feed(data)
        except ProtocolError as exc:
            log.warning("closing connection to %s: %s", self.address, exc)
            self._abort(ProtocolError(f"malformed frame from server: {exc}", address=self.address))
            return
        for command in commands:
            if command.is_response:
                self._resolve(command)
            else:
                self._answer_server_request(command)

    def connection_lost(self, exc: Exception | None) -> None:
        reason = self.close_reason or ConnectionClosed(
            f"connection closed{': ' + str(exc) if exc else ''}", address=self.address
        )
        self._mark_closed(reason)

    # requests

    def request(self, command: RemotingCommand, timeout: float) -> asyncio.Future:
        """Send a request; the future gets the response or a typed error."""
        future = self._loop.create_future()
        self._send(command, timeout, future)
        return future

    def request_then(self, command: RemotingCommand, timeout: float, on_answer) -> None:
        """Send a request; `on_answer` is called with the response or a typed error, straight
        from the code that reads it. What pipelined batches use: no future, no callback
        scheduled on the loop, per request."""
        self._send(command, timeout, _Answer(on_answer))

    def _send(self, command: RemotingCommand, timeout: float, answer) -> None:
        if self.closed:
            raise ConnectionClosed("connection is closed", address=self.address)
        frame = encode(command, max_frame=self.max_frame)
        self._pending[command.opaque] = (answer, self._loop.time() + timeout, timeout)
        if self._sweeper is None:
            self._sweeper = self._loop.call_later(SWEEP_INTERVAL, self._sweep)
        self._write(frame)

    def send_oneway(self, command: RemotingCommand) -> None:
        if self.closed:
            raise ConnectionClosed("connection is closed", address=self.address)
        self._write(encode(command, max_frame=self.max_frame))

    def close(self) -> None:
        if not self.closed:
            self._abort(ConnectionClosed("connection closed by client", address=self.address))

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # internals

    def _write(self, data: bytes) -> None:
        # Requests made in one loop iteration go out in one write: a snapshot sends thousands
        # at once, and a syscall per frame would cost more than encoding them.
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(data)

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if outgoing and not self.closed and self._transport is not None:
            self.last_used = self._loop.time()
            self._transport.write(b"".join(outgoing))

    def _resolve(self, response: RemotingCommand) -> None:
        entry = self._pending.pop(response.opaque, None)
        if entry is None:
            return  # the request already timed out
        if not entry[0].done():
            entry[0].set_result(response)

    def _sweep(self) -> None:
        # One timer per connection instead of one per request: thousands of requests in
        # flight would otherwise each create and cancel a timer.
        self._sweeper = None
        now = self._loop.time()
        expired = [opaque for opaque, (_, due, _) in self._pending.items() if due <= now]
        for opaque in expired:
            future, _, timeout = self._pending.pop(opaque)
            if not future.done():
                future.set_exception(RequestTimeout(f"no response within {timeout:.3f}s", address=self.address))
        if self._pending and not self.closed and self._sweeper is None:  # (an answer may have sent anew)
            self._sweeper = self._loop.call_later(SWEEP_INTERVAL, self._sweep)

    def _answer_server_request(self, request: RemotingCommand) -> None:
        if request.is_oneway:
            log.debug("ignoring oneway request code %s from %s", request.code, self.address)
            return
        reply = RemotingCommand(
            code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            opaque=request.opaque,
            flag=FLAG_RESPONSE,
            remark=f"request code {request.code} is not supported by this admin client",
        )
        self._write(encode(reply))

    def _abort(self, reason: Exception) -> None:
        self.close_reason = reason
        if self._transport is not None:
            self._transport.abort()  # connection_lost follows and fails what is pending
        self._mark_closed(reason)

    def _mark_closed(self, reason: Exception) -> None:
        self.closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        pending, self._pending = self._pending, {}
        for future, _, _ in pending.values():
            if not future.done():
                future.set_exception(_copy_error(reason))


class _Answer:
    """Stands where a future would in `_pending` and hands the outcome to a function."""

    __slots__ = ("_on_answer", "_done")

    def __init__(self, on_answer):
        self._on_answer, self._done = on_answer, False

    def done(self) -> bool:
        return self._done

    def set_result(self, outcome) -> None:
        self._done = True
        try:
            self._on_answer(outcome)
        except Exception:  # never lose the other answers read with this one
            log.exception("an answer's callback failed")

    set_exception = set_result


def _copy_error(reason: Exception) -> Exception:
    # One exception object raised in many awaiting tasks would share its traceback.
    if isinstance(reason, ProtocolError):
        return ProtocolError(str(reason.args[0]), address=reason.address)
    address = getattr(reason, "address", None)
    return ConnectionClosed(str(reason.args[0]) if reason.args else "connection closed", address=address)
