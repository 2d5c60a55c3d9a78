"""Typed errors. Every failure the client can raise is a RocketMQError subclass.

Each carries the address it concerns and, for broker answers, the response code and the
broker's own remark, so an operator sees exactly what the broker said.
"""

from __future__ import annotations

from .codes import ResponseCode


class RocketMQError(Exception):
    def __init__(self, message: str, *, address: str | None = None):
        super().__init__(message)
        self.address = address

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} [{self.address}]" if self.address else text


class ProtocolError(RocketMQError):
    """Bytes that do not follow the protocol: a bad frame, header, body or message."""


class TransportError(RocketMQError):
    """The request may not have reached the peer, or its answer did not come back."""


class ConnectError(TransportError):
    """Could not open a connection (refused, unreachable, or still backing off)."""


class ConnectionClosed(TransportError):
    """The connection closed while the request was in flight."""


class RequestTimeout(TransportError):
    """No answer within the request's timeout."""


class DeadlineExceeded(RequestTimeout):
    """The overall deadline of a batch of requests passed."""


class BrokerError(RocketMQError):
    """The server answered with a code the operation cannot accept."""

    def __init__(self, code: int, remark: str | None, *, address: str | None = None, request: str = ""):
        name = _code_name(code)
        text = f"{request + ': ' if request else ''}{name} ({code})"
        if remark:
            text += f": {remark}"
        super().__init__(text, address=address)
        self.code = code
        self.remark = remark or ""


class TopicNotFound(BrokerError):
    pass


class GroupNotFound(BrokerError):
    pass


class ConsumerNotOnline(BrokerError):
    pass


class NoPermission(BrokerError):
    pass


class BrokerSystemError(BrokerError):
    pass


class BrokerBusy(BrokerError):
    pass


class NotSupported(BrokerError):
    pass


class NotFound(BrokerError):
    """QUERY_NOT_FOUND: no committed offset, or no message for a query."""


_BY_CODE: dict[int, type[BrokerError]] = {
    ResponseCode.TOPIC_NOT_EXIST: TopicNotFound,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: GroupNotFound,
    ResponseCode.CONSUMER_NOT_ONLINE: ConsumerNotOnline,
    ResponseCode.NO_PERMISSION: NoPermission,
    ResponseCode.SYSTEM_ERROR: BrokerSystemError,
    ResponseCode.SYSTEM_BUSY: BrokerBusy,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: NotSupported,
    ResponseCode.QUERY_NOT_FOUND: NotFound,
}


def broker_error(code: int, remark: str | None, *, address: str | None = None, request: str = "") -> BrokerError:
    cls = _BY_CODE.get(code, BrokerError)
    return cls(code, remark, address=address, request=request)


def _code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return "CODE"
