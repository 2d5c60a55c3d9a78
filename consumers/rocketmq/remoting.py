"""The request layer: connections per address, timeouts, deadlines, backoff, signing.

`RemotingClient.invoke` sends one request and returns the server's answer whatever its
code; `call` additionally turns codes the caller does not accept into typed BrokerErrors.
A deadline set with `deadline(seconds)` bounds every request made inside it, including
those of tasks started inside it (it lives in a context variable).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import itertools
import random
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .acl import Credentials, sign
from .codes import DEFAULT_VERSION, RequestCode, ResponseCode
from .connection import Connection
from .errors import (
    ConnectError,
    DeadlineExceeded,
    RequestTimeout,
    RocketMQError,
    TransportError,
    broker_error,
)
from .frame import FLAG_ONEWAY, MAX_FRAME, RemotingCommand
from .message import split_address

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("rocketmq_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Bound every request made inside the block to finish within `seconds` from now."""
    at = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(at if outer is None else min(at, outer))
    try:
        yield at
    finally:
        _deadline.reset(token)


def extend_deadline(at: float) -> None:
    """Move the deadline of the block this runs in (`deadline`) later, to `at` (monotonic), for
    what is asked from now on: a poll that learns how big a cluster is only once it has listed
    it. Never earlier, and never outside a block."""
    current = _deadline.get()
    if current is not None and at > current:
        _deadline.set(at)


def remaining_time() -> float | None:
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


def split_namesrv_list(value: str) -> list[str]:
    """Name server addresses as RocketMQ writes them: host:port separated by ';' (or ',')."""
    return [a.strip() for a in value.replace(",", ";").split(";") if a.strip()]


@dataclass
class ClientConfig:
    namesrv_addrs: list[str]
    credentials: Credentials | None = None
    request_timeout: float = 5.0
    connect_timeout: float = 3.0
    max_in_flight: int = 512
    version: int = DEFAULT_VERSION
    max_frame: int = MAX_FRAME
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    route_ttl: float = 30.0
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.namesrv_addrs, str):
            self.namesrv_addrs = split_namesrv_list(self.namesrv_addrs)
        if not self.namesrv_addrs:
            raise ValueError("at least one name server address is required")
        for address in self.namesrv_addrs:
            split_address(address)


class _Backoff:
    __slots__ = ("failures", "retry_at", "last_error")

    def __init__(self) -> None:
        self.failures = 0
        self.retry_at = 0.0
        self.last_error: Exception | None = None


class RemotingClient:
    def __init__(self, config: ClientConfig):
        self.config = config
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task] = {}
        self._backoff: dict[str, _Backoff] = {}
        self._opaque = itertools.count(1)
        self._in_flight = 0
        self._waiting: collections.deque[asyncio.Future] = collections.deque()
        self._closed = False

    # public API

    async def invoke(
        self,
        address: str,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        requested = self.config.request_timeout if timeout is None else timeout
        request = self._command(code, ext_fields, body)
        await self._acquire()
        try:
            connection = self._connections.get(address)
            if connection is None or connection.closed:
                connection = await self._connection(address, self._timeout(requested)[0])
            wait, bound_by_deadline = self._timeout(requested)  # connecting used some of it
            try:
                return await connection.request(request, wait)
            except RequestTimeout as exc:
                if bound_by_deadline:
                    raise DeadlineExceeded(f"deadline passed waiting for code {code}", address=address) from exc
                raise
        finally:
            self._release()

    async def call(
        self,
        address: str,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        accept: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        """Like invoke, but a response code outside `accept` raises its typed BrokerError."""
        response = await self.invoke(address, code, ext_fields, body, timeout=timeout)
        if response.code not in accept:
            raise broker_error(response.code, response.remark, address=address, request=_request_name(code))
        return response

    async def invoke_many(
        self, requests: list[tuple[str, int, dict | None] | tuple[str, int, dict | None, bytes]], *,
        timeout: float | None = None,
    ) -> list[RemotingCommand | RocketMQError]:  # fmt: skip
        """Send many (address, code, ext fields[, body]) requests pipelined and return each
        answer, or its typed transport error, in order.

        No task or coroutine per request: a window of at most max_in_flight requests is kept
        full from completion callbacks. This is what a snapshot of thousands of groups runs
        on; one request per coroutine would cost more than encoding and parsing them.

        The limit is shared with every other request of this client: when other requests hold
        every place, the batch waits in the same queue as `invoke` for a place to be released,
        and a place it releases that it does not need goes to the next in that queue."""
        if not requests:
            return []
        connections: dict[str, Connection | RocketMQError] = {}
        for address in {r[0] for r in requests}:
            try:
                connections[address] = await self._connection(address, self._timeout(timeout)[0])
            except RocketMQError as exc:
                connections[address] = exc
        batch = _Batch(self, requests, connections, *self._timeout(timeout))
        batch.send()
        await batch.finished
        return batch.results

    async def call_namesrv(self, code: int, ext_fields: dict[str, str] | None = None, **kwargs) -> RemotingCommand:
        """Call the first name server that answers; on transport errors try the next."""
        last: Exception | None = None
        addresses = list(self.config.namesrv_addrs)
        for address in addresses:
            try:
                return await self.call(address, code, ext_fields, **kwargs)
            except DeadlineExceeded:
                raise
            except TransportError as exc:
                last = exc
        raise ConnectError(f"no name server answered ({', '.join(addresses)}): {last}") from last

    async def oneway(
        self, address: str, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b""
    ) -> None:
        timeout, _ = self._timeout(None)
        request = self._command(code, ext_fields, body, flag=FLAG_ONEWAY)
        connection = await self._connection(address, timeout)
        connection.send_oneway(request)

    async def close(self) -> None:
        self._closed = True
        for task in self._connecting.values():
            task.cancel()
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
        await asyncio.sleep(0)  # let transports run their close callbacks

    # internals

    def _timeout(self, timeout: float | None) -> tuple[float, bool]:
        """The time a request may take: its own timeout, or less if the deadline is nearer."""
        timeout = self.config.request_timeout if timeout is None else timeout
        left = remaining_time()
        if left is None or left >= timeout:
            return timeout, False
        if left <= 0:
            raise DeadlineExceeded("deadline already passed")
        return left, True

    def _command(self, code: int, ext_fields: dict[str, str] | None, body: bytes, flag: int = 0) -> RemotingCommand:
        ext = {k: v if isinstance(v, str) else _to_wire(v) for k, v in (ext_fields or {}).items() if v is not None}
        if self.config.credentials is not None:
            ext = sign(ext, body, self.config.credentials)
        opaque = next(self._opaque) & 0x7FFFFFFF
        return RemotingCommand(
            code=code, opaque=opaque, flag=flag, ext_fields=ext, body=body, version=self.config.version
        )

    async def _acquire(self) -> None:
        """Bound the requests in flight. Cheaper than asyncio.Semaphore on the path that
        matters: below the limit nothing is awaited and no waiter is woken."""
        while self._in_flight >= self.config.max_in_flight:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            except BaseException:
                if not waiter.cancelled() and waiter.done():
                    self._wake_next()  # we were handed a place we will not use
                raise
        self._in_flight += 1

    def _release(self) -> None:
        self._in_flight -= 1
        self._wake_next()

    def _wake_next(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _connection(self, address: str, timeout: float) -> Connection:
        connection = self._connections.get(address)
        if connection is not None and not connection.closed:
            return connection
        if self._closed:
            raise ConnectError("client is closed", address=address)
        task = self._connecting.get(address)
        if task is None:
            task = asyncio.ensure_future(self._connect(address))
            self._connecting[address] = task
            task.add_done_callback(lambda _t, a=address: self._connecting.pop(a, None))
        try:
            return await asyncio.wait_for(asyncio.shield(task), min(timeout, self.config.connect_timeout))
        except TimeoutError:
            raise ConnectError(
                f"connect timed out after {min(timeout, self.config.connect_timeout):.3f}s", address=address
            ) from None

    async def _connect(self, address: str) -> Connection:
        state = self._backoff.setdefault(address, _Backoff())
        now = time.monotonic()
        if now < state.retry_at:
            raise ConnectError(
                f"not reconnecting for another {state.retry_at - now:.2f}s after: {state.last_error}", address=address
            )
        host, port = split_address(address)
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: Connection(address, max_frame=self.config.max_frame), host, port),
                self.config.connect_timeout,
            )
        except (TimeoutError, OSError) as exc:
            state.failures += 1
            delay = min(self.config.backoff_max, self.config.backoff_initial * 2 ** (state.failures - 1))
            state.retry_at = time.monotonic() + delay * random.uniform(0.8, 1.0)
            state.last_error = exc
            raise ConnectError(f"cannot connect: {exc or type(exc).__name__}", address=address) from None
        state.failures = 0
        state.retry_at = 0.0
        self._connections[address] = connection
        return connection


def _to_wire(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _request_name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return f"request {code}"


def _copy(error: RocketMQError) -> RocketMQError:
    # one connection error is reported for many requests: give each its own exception object
    copy = type(error).__new__(type(error))
    copy.__dict__.update(error.__dict__)
    copy.args = error.args
    return copy


class _Batch:
    """One `invoke_many`: its requests sent as places free up (from the answers' callbacks),
    each outcome put in its place. An object, not closures calling one another: such closures
    form a reference cycle, which held every answer of the batch (at 50,000 groups, the offset
    tables of thousands) until the garbage collector next ran, long after the caller was done."""

    __slots__ = ("client", "requests", "connections", "results", "finished", "next", "open", "mine", "wait", "bound")

    def __init__(self, client: RemotingClient, requests: list, connections: dict, wait, bound_by_deadline: bool):
        self.client, self.requests, self.connections = client, requests, connections
        self.results: list = [None] * len(requests)
        self.finished = asyncio.get_running_loop().create_future()
        self.next, self.open, self.mine = 0, len(requests), 0
        self.wait, self.bound = wait, bound_by_deadline

    def complete(self, index: int, outcome) -> None:
        self.results[index] = outcome
        self.open -= 1
        if self.open == 0 and not self.finished.done():
            self.finished.set_result(None)

    def on_answer(self, index: int, address: str, outcome) -> None:
        client = self.client
        client._in_flight -= 1
        self.mine -= 1
        if isinstance(outcome, RequestTimeout) and self.bound:
            outcome = DeadlineExceeded(f"deadline passed: {outcome}", address=address)
        self.complete(index, outcome)
        self.send()
        if client._in_flight < client.config.max_in_flight:
            client._wake_next()

    def send(self) -> None:
        if self.finished.done():
            return  # the caller is gone (cancelled)
        client, requests = self.client, self.requests
        while self.next < len(requests) and client._in_flight < client.config.max_in_flight:
            index = self.next
            self.next += 1
            request = requests[index]
            address, code, ext_fields = request[0], request[1], request[2]
            connection = self.connections[address]
            try:
                if isinstance(connection, RocketMQError):
                    raise connection
                body = request[3] if len(request) > 3 else b""
                command = client._command(code, ext_fields, body)
                # never answered from within: the answer comes from reading the socket
                connection.request_then(command, self.wait, functools.partial(self.on_answer, index, address))
            except RocketMQError as exc:
                self.complete(index, _copy(exc))
                continue
            client._in_flight += 1
            self.mine += 1
        if self.next < len(requests) and self.mine == 0:
            # every place is held by other requests: wait for one to be released
            waiter = asyncio.get_running_loop().create_future()
            waiter.add_done_callback(self.on_place)
            client._waiting.append(waiter)

    def on_place(self, _waiter: asyncio.Future) -> None:
        if self.finished.done():
            self.client._wake_next()  # handed a place this batch will not use
        else:
            self.send()
