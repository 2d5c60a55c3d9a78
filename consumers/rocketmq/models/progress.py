"""Typed results for consumer progress: consume stats, connections, running info."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..codes import language_name, version_name
from ..fastjson import pairs
from .topology import MessageQueue


def _float_or_none(value: object) -> float | None:
    # fastjson writes NaN and infinities as null
    return None if value is None else float(value)


@dataclass(slots=True)
class OffsetWrapper:
    broker_offset: int
    consumer_offset: int
    pull_offset: int | None
    last_timestamp: int

    @classmethod
    def from_wire(cls, data: dict) -> OffsetWrapper:
        # Runs once per queue per group per poll: convert only what is not an int already.
        broker, consumer, pull, last = (
            data.get("brokerOffset", 0),
            data.get("consumerOffset", 0),
            data.get("pullOffset"),  # absent before 5.1
            data.get("lastTimestamp", 0),
        )
        return cls(
            broker if type(broker) is int else int(broker),
            consumer if type(consumer) is int else int(consumer),
            pull if pull is None or type(pull) is int else int(pull),
            last if type(last) is int else int(last),
        )

    @property
    def lag(self) -> int:
        return self.broker_offset - self.consumer_offset


@dataclass(slots=True)
class ConsumeStats:
    offsets: dict[MessageQueue, OffsetWrapper]
    consume_tps: float | None

    @classmethod
    def from_wire(cls, data: dict) -> ConsumeStats:
        offsets = {
            MessageQueue.from_wire(k): OffsetWrapper.from_wire(v) for k, v in pairs(data.get("offsetTable") or {})
        }
        return cls(offsets=offsets, consume_tps=_float_or_none(data.get("consumeTps")))

    @property
    def total_lag(self) -> int:
        return sum(w.lag for w in self.offsets.values())

    def merge(self, other: ConsumeStats) -> ConsumeStats:
        tps = (
            None
            if self.consume_tps is None and other.consume_tps is None
            else ((self.consume_tps or 0.0) + (other.consume_tps or 0.0))
        )
        return ConsumeStats(offsets={**self.offsets, **other.offsets}, consume_tps=tps)


@dataclass(slots=True)
class SubscriptionData:
    topic: str
    sub_string: str
    expression_type: str = "TAG"
    tags: list[str] = field(default_factory=list)
    sub_version: int = 0

    @classmethod
    def from_wire(cls, data: dict) -> SubscriptionData:
        return cls(
            topic=str(data.get("topic", "")),
            sub_string=str(data.get("subString", "")),
            expression_type=str(data.get("expressionType") or "TAG"),
            tags=sorted(str(t) for t in data.get("tagsSet") or []),
            sub_version=int(data.get("subVersion", 0)),
        )

    @property
    def signature(self) -> tuple[str, str, str]:
        """What two members of a group must agree on."""
        return (self.topic, self.expression_type, self.sub_string)


@dataclass(slots=True)
class ClientConnection:
    client_id: str
    client_addr: str
    language: str
    version: int

    @classmethod
    def from_wire(cls, data: dict) -> ClientConnection:
        return cls(
            client_id=str(data.get("clientId", "")),
            client_addr=str(data.get("clientAddr", "")),
            language=language_name(data.get("language")),
            version=int(data.get("version", 0)),
        )

    @property
    def version_name(self) -> str:
        return version_name(self.version)


@dataclass(slots=True)
class ConsumerConnection:
    connections: list[ClientConnection]
    subscriptions: dict[str, SubscriptionData]
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None

    @classmethod
    def from_wire(cls, data: dict) -> ConsumerConnection:
        connections = [ClientConnection.from_wire(c) for c in data.get("connectionSet") or []]
        connections.sort(key=lambda c: c.client_id)
        subs = {str(t): SubscriptionData.from_wire(s) for t, s in pairs(data.get("subscriptionTable") or {})}
        return cls(
            connections=connections,
            subscriptions=subs,
            consume_type=data.get("consumeType"),
            message_model=data.get("messageModel"),
            consume_from_where=data.get("consumeFromWhere"),
        )

    @property
    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.connections]


@dataclass(slots=True)
class ProcessQueueInfo:
    commit_offset: int
    cached_msg_min_offset: int
    cached_msg_max_offset: int
    cached_msg_count: int
    cached_msg_size_mib: int
    locked: bool
    dropped: bool
    last_pull_timestamp: int
    last_consume_timestamp: int
    try_unlock_times: int = 0  # orderly: how often it tried to give the queue's lock back
    last_lock_timestamp: int = 0

    @classmethod
    def from_wire(cls, data: dict) -> ProcessQueueInfo:
        return cls(
            commit_offset=int(data.get("commitOffset", -1)),
            cached_msg_min_offset=int(data.get("cachedMsgMinOffset", 0)),
            cached_msg_max_offset=int(data.get("cachedMsgMaxOffset", 0)),
            cached_msg_count=int(data.get("cachedMsgCount", 0)),
            cached_msg_size_mib=int(data.get("cachedMsgSizeInMiB", 0)),
            locked=bool(data.get("locked", False)),
            dropped=bool(data.get("droped", False)),  # sic: the Java field name
            last_pull_timestamp=int(data.get("lastPullTimestamp", 0)),
            last_consume_timestamp=int(data.get("lastConsumeTimestamp", 0)),
            try_unlock_times=int(data.get("tryUnlockTimes", 0)),
            last_lock_timestamp=int(data.get("lastLockTimestamp", 0)),
        )


@dataclass(slots=True)
class ConsumeStatus:
    pull_rt: float | None
    pull_tps: float | None
    consume_rt: float | None
    consume_ok_tps: float | None
    consume_failed_tps: float | None
    consume_failed_msgs: int

    @classmethod
    def from_wire(cls, data: dict) -> ConsumeStatus:
        return cls(
            pull_rt=_float_or_none(data.get("pullRT")),
            pull_tps=_float_or_none(data.get("pullTPS")),
            consume_rt=_float_or_none(data.get("consumeRT")),
            consume_ok_tps=_float_or_none(data.get("consumeOKTPS")),
            consume_failed_tps=_float_or_none(data.get("consumeFailedTPS")),
            consume_failed_msgs=int(data.get("consumeFailedMsgs") or 0),
        )


@dataclass(slots=True)
class PopQueueInfo:
    """A remoting POP client's view of one queue it pops from (PopProcessQueueInfo): how many
    popped messages wait for its ack, and when it last popped there (ms; 0: never)."""

    wait_ack_count: int
    dropped: bool
    last_pop_ms: int

    @classmethod
    def from_wire(cls, data: dict) -> PopQueueInfo:
        return cls(
            int(data.get("waitAckCount", 0)), bool(data.get("droped", False)), int(data.get("lastPopTimestamp", 0))
        )


@dataclass(slots=True)
class ConsumerRunningInfo:
    """What one client reports about itself: its queues, client-side offsets and rates. A
    remoting client switched to POP holds no queue (`mq_table` empty) and reports the queues it
    pops from in `pop_table` instead."""

    properties: dict[str, str]
    subscriptions: list[SubscriptionData]
    mq_table: dict[MessageQueue, ProcessQueueInfo]
    status_table: dict[str, ConsumeStatus]
    jstack: str | None = None
    pop_table: dict[MessageQueue, PopQueueInfo] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, data: dict) -> ConsumerRunningInfo:
        return cls(
            properties={str(k): str(v) for k, v in (data.get("properties") or {}).items()},
            subscriptions=[SubscriptionData.from_wire(s) for s in data.get("subscriptionSet") or []],
            mq_table={
                MessageQueue.from_wire(k): ProcessQueueInfo.from_wire(v) for k, v in pairs(data.get("mqTable") or {})
            },
            status_table={str(t): ConsumeStatus.from_wire(s) for t, s in pairs(data.get("statusTable") or {})},
            jstack=data.get("jstack"),
            pop_table={
                MessageQueue.from_wire(k): PopQueueInfo.from_wire(v) for k, v in pairs(data.get("mqPopTable") or {})
            },
        )

    @property
    def consume_type(self) -> str | None:
        return self.properties.get("PROP_CONSUME_TYPE")

    @property
    def message_model(self) -> str | None:
        return self.properties.get("messageModel")

    @property
    def allocation_strategy(self) -> str | None:
        value = self.properties.get("allocateMessageQueueStrategy")
        return value.split("@")[0].rsplit(".", 1)[-1] if value else None

    @property
    def client_version(self) -> str | None:
        return self.properties.get("PROP_CLIENT_VERSION")

    @property
    def orderly(self) -> bool:
        return self.properties.get("PROP_CONSUMEORDERLY", "false").lower() == "true"


@dataclass(slots=True)
class TopicOffset:
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(slots=True)
class TopicStatsTable:
    offsets: dict[MessageQueue, TopicOffset]
    put_tps: float | None = None

    @classmethod
    def from_wire(cls, data: dict) -> TopicStatsTable:
        offsets = {
            MessageQueue.from_wire(k): TopicOffset(
                int(v.get("minOffset", 0)), int(v.get("maxOffset", 0)), int(v.get("lastUpdateTimestamp", 0))
            )
            for k, v in pairs(data.get("offsetTable") or {})
        }
        return cls(offsets=offsets, put_tps=_float_or_none(data.get("topicPutTps")))
