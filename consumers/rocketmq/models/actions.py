"""Typed results for actions and message reads: sends, pulls, resets, direct consumption."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..message import Message
from .topology import MessageQueue


@dataclass(slots=True)
class Outgoing:
    """One message of a pipelined batch send (`Actions.send_messages`)."""

    topic: str
    body: bytes
    properties: dict[str, str]
    unique_key: str | None = None
    reconsume_times: int | None = None


@dataclass(slots=True)
class SendResult:
    status: str  # SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE
    msg_id: str  # the client id (UNIQ_KEY) we set
    offset_msg_id: str  # the broker's offset id: store host + commit-log offset
    queue: MessageQueue
    queue_offset: int


@dataclass(slots=True)
class PullResult:
    status: str  # FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[Message] = field(default_factory=list)


@dataclass(slots=True)
class ConsumeMessageDirectlyResult:
    consume_result: str  # CR_SUCCESS, CR_LATER, CR_ROLLBACK, CR_COMMIT, CR_THROW_EXCEPTION, CR_RETURN_NULL
    order: bool
    auto_commit: bool
    remark: str
    spent_time_millis: int

    @classmethod
    def from_wire(cls, data: dict) -> ConsumeMessageDirectlyResult:
        return cls(
            consume_result=str(data.get("consumeResult", "")),
            order=bool(data.get("order", False)),
            auto_commit=bool(data.get("autoCommit", True)),
            remark=str(data.get("remark") or ""),
            spent_time_millis=int(data.get("spentTimeMills", 0)),  # sic: the Java field name
        )


@dataclass(slots=True)
class BrokerReset:
    """What one broker did for a reset: `path` is how it was applied there.

    - "server": the broker wrote the offsets itself (5.2+ server-side reset);
    - "client": the broker told online clients, which apply it (4.x and 5.0/5.1);
    - "offline": no client was online, so we wrote each queue's offset ourselves;
    - "failed": nothing is known to have changed there; `error` says why.
    """

    broker_name: str
    address: str
    path: str
    offsets: dict[MessageQueue, int]
    error: str | None = None


@dataclass(slots=True)
class ResetOffsetResult:
    group: str
    topic: str
    timestamp: int
    brokers: list[BrokerReset]

    @property
    def failed(self) -> list[BrokerReset]:
        return [b for b in self.brokers if b.error]

    @property
    def ok(self) -> bool:
        return bool(self.brokers) and not self.failed

    @property
    def offsets(self) -> dict[MessageQueue, int]:
        merged: dict[MessageQueue, int] = {}
        for broker in self.brokers:
            merged.update(broker.offsets)
        return dict(sorted(merged.items()))
