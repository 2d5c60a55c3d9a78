"""What every group of operations shares: the connection pool, body parsing into typed results.

A group is given what it needs (the pool, the client's configuration, the groups it builds
on), never the AdminClient that holds them all: the client imports the groups, not the reverse."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..codes import RequestCode, ResponseCode
from ..errors import ProtocolError, RocketMQError, broker_error
from ..fastjson import loads
from ..frame import RemotingCommand
from ..remoting import RemotingClient

T = TypeVar("T")


class Operations:
    def __init__(self, remoting: RemotingClient):
        self.remoting = remoting


def parse_body(
    response: RemotingCommand,
    build: Callable[[dict], T],
    *,
    what: str,
    address: str | None = None,
    numeric_keys: bool = True,
) -> T:
    """Parse a fastjson body and build a typed result; anything malformed is a ProtocolError.
    `numeric_keys=False`: bare numeric keys stay the strings written (fastjson.loads)."""
    data = loads(response.body, numeric_keys=numeric_keys) if response.body else {}
    if not isinstance(data, dict):
        raise ProtocolError(f"{what} body is not an object", address=address)
    try:
        return build(data)
    except ProtocolError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"malformed {what} body: {type(exc).__name__}: {exc}", address=address) from None


def ext_int(response: RemotingCommand, key: str, *, address: str | None = None) -> int:
    value = response.ext_fields.get(key)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ProtocolError(f"response field {key!r} is missing or not a number: {value!r}", address=address) from None


def typed_answer(
    answer: RemotingCommand | RocketMQError,
    address: str,
    build: Callable[[dict], T],
    *,
    what: str,
    code: int,
    accept=(ResponseCode.SUCCESS,),
    numeric_keys: bool = True,
) -> T | RocketMQError:
    """One answer of a batch as a typed result, or the typed error it amounts to."""
    if isinstance(answer, RocketMQError):
        return answer
    if answer.code not in accept:
        return broker_error(answer.code, answer.remark, address=address, request=RequestCode(code).name)
    try:
        return parse_body(answer, build, what=what, address=address, numeric_keys=numeric_keys)
    except ProtocolError as exc:
        return exc
