"""Typed results for cluster topology: brokers, routes, topic and group configs, runtime stats."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import total_ordering

from ..codes import DLQ_PREFIX, RETRY_PREFIX, Perm
from ..errors import ProtocolError
from ..fastjson import pairs

MASTER_ID = 0

# Topics every broker creates for itself; a console lists them apart from business topics.
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "SELF_TEST_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "DefaultHeartBeatSyncerTopic",  # rocketmq-proxy's heartbeat sync (cluster mode)
    }
)
SYSTEM_GROUPS = frozenset(
    {
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PULL",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_SYS_RMQ_TRANS",
        "CID_RMQ_SYS_TRANS",
        "CID_HOLD_REQUEST",
        # rocketmq-proxy (cluster mode): the broadcasting group its heartbeat syncer consumes with
        # ("CID_" + heartbeatSyncerTopicName, AbstractSystemMessageSyncer)
        "CID_DefaultHeartBeatSyncerTopic",
    }
)
SYSTEM_GROUP_PREFIXES = ("CID_RMQ_SYS_",)


def is_system_topic(topic: str, cluster_and_broker_names: frozenset[str] = frozenset()) -> bool:
    upper = topic.upper()
    return topic in SYSTEM_TOPICS or upper.startswith("RMQ_SYS_") or topic in cluster_and_broker_names


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_GROUP_PREFIXES)


def topic_kind(topic: str) -> str:
    if topic.startswith(RETRY_PREFIX):
        return "retry"
    if topic.startswith(DLQ_PREFIX):
        return "dlq"
    return "normal"


@total_ordering
@dataclass(frozen=True, slots=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    @classmethod
    def from_wire(cls, data: object) -> MessageQueue:
        if not isinstance(data, dict):
            raise ProtocolError(f"message queue is not an object: {data!r}")
        try:
            return shared_queue(str(data["topic"]), str(data["brokerName"]), int(data["queueId"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed message queue {data!r}: {exc}") from None

    def to_wire(self) -> dict:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    def _key(self) -> tuple:
        return (self.topic, self.broker_name, self.queue_id)

    def __lt__(self, other: MessageQueue) -> bool:  # the order of Java's MessageQueue.compareTo
        return self._key() < other._key()

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}#{self.queue_id}"


@functools.lru_cache(maxsize=65536)
def shared_queue(topic: str, broker_name: str, queue_id: int) -> MessageQueue:
    """The queue, built once and shared: the same queues come back in every group's stats, a
    frozen dataclass is slow to construct, and a dict finds a shared key by identity before it
    compares fields."""
    return MessageQueue(topic, broker_name, queue_id)


@dataclass(slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    addrs: dict[int, str]

    @classmethod
    def from_wire(cls, data: dict) -> BrokerData:
        addrs = {int(k): str(v) for k, v in pairs(data.get("brokerAddrs") or {})}
        return cls(cluster=str(data.get("cluster", "")), broker_name=str(data["brokerName"]), addrs=addrs)

    @property
    def master_addr(self) -> str | None:
        return self.addrs.get(MASTER_ID)


@dataclass(slots=True)
class ClusterInfo:
    brokers: dict[str, BrokerData]
    clusters: dict[str, list[str]]

    @classmethod
    def from_wire(cls, data: dict) -> ClusterInfo:
        brokers = {str(name): BrokerData.from_wire(b) for name, b in pairs(data.get("brokerAddrTable") or {})}
        clusters = {str(c): sorted(str(n) for n in names) for c, names in pairs(data.get("clusterAddrTable") or {})}
        return cls(brokers=brokers, clusters=clusters)

    def masters(self, cluster: str | None = None) -> dict[str, str]:
        """broker name -> master address, for live masters only."""
        names = self.clusters.get(cluster, []) if cluster else self.brokers.keys()
        result = {}
        for name in sorted(names):
            broker = self.brokers.get(name)
            if broker and broker.master_addr:
                result[name] = broker.master_addr
        return result

    def all_addresses(self) -> set[str]:
        return {addr for broker in self.brokers.values() for addr in broker.addrs.values()}

    def reserved_names(self) -> frozenset[str]:
        return frozenset(self.clusters) | frozenset(self.brokers)


@dataclass(slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_wire(cls, data: dict) -> QueueData:
        return cls(
            broker_name=str(data["brokerName"]),
            read_queue_nums=int(data.get("readQueueNums", 0)),
            write_queue_nums=int(data.get("writeQueueNums", 0)),
            perm=int(data.get("perm", 0)),
            # brokers up to 4.8 spell it topicSynFlag
            topic_sys_flag=int(data.get("topicSysFlag", data.get("topicSynFlag", 0))),
        )


@dataclass(slots=True)
class TopicRoute:
    topic: str
    queue_datas: list[QueueData]
    broker_datas: list[BrokerData]

    @classmethod
    def from_wire(cls, topic: str, data: dict) -> TopicRoute:
        return cls(
            topic=topic,
            queue_datas=[QueueData.from_wire(q) for q in data.get("queueDatas") or []],
            broker_datas=[BrokerData.from_wire(b) for b in data.get("brokerDatas") or []],
        )

    def master_addrs(self) -> dict[str, str]:
        return {b.broker_name: b.master_addr for b in self.broker_datas if b.master_addr}

    def read_addrs(self) -> dict[str, str]:
        """broker name -> the address to read from: the master, or (its master down) the slave
        with the lowest id, as Java's BrokerData.selectBrokerAddr. Slaves hold the same commit
        log and index, so lookups by id and key work on them."""
        return {b.broker_name: b.master_addr or b.addrs[min(b.addrs)] for b in self.broker_datas if b.addrs}

    def read_queues(self, readable_only: bool = True) -> list[MessageQueue]:
        queues = []
        for q in self.queue_datas:
            if readable_only and not Perm.readable(q.perm):
                continue
            queues += [MessageQueue(self.topic, q.broker_name, i) for i in range(q.read_queue_nums)]
        return sorted(queues)

    def queue_data(self, broker_name: str) -> QueueData | None:
        return next((q for q in self.queue_datas if q.broker_name == broker_name), None)


@dataclass(slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 4
    write_queue_nums: int = 4
    perm: int = Perm.READ | Perm.WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, data: dict) -> TopicConfig:
        return cls(
            topic_name=str(data["topicName"]),
            read_queue_nums=int(data.get("readQueueNums", 0)),
            write_queue_nums=int(data.get("writeQueueNums", 0)),
            perm=int(data.get("perm", 0)),
            topic_filter_type=str(data.get("topicFilterType") or "SINGLE_TAG"),
            topic_sys_flag=int(data.get("topicSysFlag", data.get("topicSynFlag", 0))),
            order=bool(data.get("order", False)),
            attributes={str(k): str(v) for k, v in (data.get("attributes") or {}).items()},
        )


@dataclass(slots=True)
class SubscriptionGroupConfig:
    """The fields a console reads; `raw` keeps every field the broker sent, so an update
    can be a read-modify-write that does not reset fields we do not know."""

    group_name: str
    consume_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    raw: dict = field(default_factory=dict)

    @classmethod
    def from_wire(cls, data: dict) -> SubscriptionGroupConfig:
        return cls(
            group_name=str(data["groupName"]),
            consume_enable=bool(data.get("consumeEnable", True)),
            consume_broadcast_enable=bool(data.get("consumeBroadcastEnable", True)),
            consume_message_orderly=bool(data.get("consumeMessageOrderly", False)),
            retry_queue_nums=int(data.get("retryQueueNums", 1)),
            retry_max_times=int(data.get("retryMaxTimes", 16)),
            broker_id=int(data.get("brokerId", 0)),
            raw=dict(data),
        )

    def to_wire(self) -> dict:
        data = dict(self.raw)
        data.update(
            groupName=self.group_name,
            consumeEnable=self.consume_enable,
            consumeBroadcastEnable=self.consume_broadcast_enable,
            consumeMessageOrderly=self.consume_message_orderly,
            retryQueueNums=self.retry_queue_nums,
            retryMaxTimes=self.retry_max_times,
            brokerId=self.broker_id,
        )
        return data


@dataclass(slots=True)
class BrokerRuntimeInfo:
    """GET_BROKER_RUNTIME_INFO: a table of strings; the properties parse the common ones."""

    table: dict[str, str]

    @property
    def version(self) -> str:
        return self.table.get("brokerVersionDesc", "")

    def tps(self, key: str) -> tuple[float, ...]:
        """TPS keys hold three numbers: the 10 s, 1 min and 10 min windows."""
        try:
            return tuple(float(x) for x in self.table.get(key, "").split())
        except ValueError:
            return ()

    @property
    def put_tps(self) -> float | None:
        values = self.tps("putTps")
        return values[0] if values else None

    @property
    def get_tps(self) -> float | None:
        values = self.tps("getTotalTps") or self.tps("getFoundTps")
        return values[0] if values else None

    @property
    def boot_timestamp(self) -> int | None:
        value = self.table.get("bootTimestamp")
        return int(value) if value and value.isascii() and value.isdigit() else None


@dataclass(slots=True)
class StatsItem:
    sum: int
    tps: float
    avgpt: float


@dataclass(slots=True)
class BrokerStatsData:
    """VIEW_BROKER_STATS_DATA: one statistic (e.g. GROUP_GET_NUMS of topic@group)."""

    minute: StatsItem
    hour: StatsItem
    day: StatsItem

    @classmethod
    def from_wire(cls, data: dict) -> BrokerStatsData:
        def item(key: str) -> StatsItem:
            raw = data.get(key) or {}
            return StatsItem(int(raw.get("sum") or 0), float(raw.get("tps") or 0.0), float(raw.get("avgpt") or 0.0))

        return cls(minute=item("statsMinute"), hour=item("statsHour"), day=item("statsDay"))
