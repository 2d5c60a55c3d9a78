"""Message reads: pull a queue range, read a range by position, view by id, query by key.

Pulls go out as TOOLS_CONSUMER with only the subscription flag set: no offset is committed
and no application group's pull offset or pending reset is touched.

A queue the broker refuses to pull (a write-only topic: DLQs made by brokers before 4.9.2
keep perm 2) is read by position instead: its consume queue gives each entry's commit-log
offset (QUERY_CONSUME_QUEUE) and each message is read at that offset (VIEW_MESSAGE_BY_ID).
Neither request checks the topic's read permission (AdminBrokerProcessor.queryConsumeQueue,
QueryMessageProcessor.viewMessageById; checked against a 5.3 broker).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..codes import TOOLS_CONSUMER_GROUP, RequestCode, ResponseCode
from ..errors import NoPermission, NotFound, ProtocolError, RocketMQError, broker_error
from ..message import Message, decode_messages, decode_offset_msg_id
from ..models import MessageQueue, PullResult
from ..remoting import ClientConfig, RemotingClient
from .base import Operations, ext_int, parse_body
from .topology import Topology

PULL_FLAG_SUBSCRIPTION = 0x4
MAX_PULL_BATCH = 32  # the broker caps a pull at 32 messages from page cache anyway
CONSUME_QUEUE_BATCH = 256  # consume-queue entries per QUERY_CONSUME_QUEUE (about 80 bytes each)
KEY_QUERY_MAX = 64  # messages a broker answers a key query with at most (maxMsgsNumBatch)
UNIQUE_QUERY_MAX = 32  # ... a unique-key query, flagged as one (defaultQueryMaxNum)
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG
INDEX_TIME_GRAIN_MS = 1000  # the index keeps store times in whole seconds
INDEX_END = 2**62  # "no end" (Java sends Long.MAX_VALUE)

_PULL_STATUS = {
    ResponseCode.SUCCESS: "FOUND",
    ResponseCode.PULL_NOT_FOUND: "NO_NEW_MSG",
    ResponseCode.PULL_RETRY_IMMEDIATELY: "NO_MATCHED_MSG",
    ResponseCode.PULL_OFFSET_MOVED: "OFFSET_ILLEGAL",
}


@dataclass(frozen=True, slots=True)
class Located:
    """A message and the broker (name) it was read from."""

    broker: str
    message: Message


@dataclass
class IndexAnswer:
    """What the brokers' indexes gave for one key: the matching messages, the brokers that
    could not be read (with their error), and those that answered as many as they may."""

    messages: list[Located] = field(default_factory=list)
    errors: dict[str, RocketMQError] = field(default_factory=dict)
    capped: list[str] = field(default_factory=list)

    def strict(self) -> list[Message]:
        """The messages, or the first broker's error: no answer is "not there" while a broker
        that may hold it was not read."""
        for _, error in sorted(self.errors.items()):
            raise error
        return [found.message for found in self.messages]


class Messages(Operations):
    def __init__(self, remoting: RemotingClient, config: ClientConfig, topology: Topology):
        super().__init__(remoting)
        self.config = config
        self.topology = topology

    async def pull(self, mq: MessageQueue, offset: int, *, max_nums: int = MAX_PULL_BATCH) -> PullResult:
        address = await self.topology.master_addr(mq.broker_name)
        fields = {
            "consumerGroup": TOOLS_CONSUMER_GROUP,
            "topic": mq.topic,
            "queueId": mq.queue_id,
            "queueOffset": offset,
            "maxMsgNums": max_nums,
            "sysFlag": PULL_FLAG_SUBSCRIPTION,
            "commitOffset": 0,
            "suspendTimeoutMillis": 0,
            "subscription": "*",
            "subVersion": 0,
            "expressionType": "TAG",
        }
        response = await self.remoting.call(address, RequestCode.PULL_MESSAGE, fields, accept=_PULL_STATUS)
        messages = []
        if response.code == ResponseCode.SUCCESS:
            try:
                messages = decode_messages(response.body)
            except ProtocolError as exc:
                exc.address = address
                raise
        return PullResult(
            status=_PULL_STATUS[response.code],
            next_begin_offset=ext_int(response, "nextBeginOffset", address=address),
            min_offset=ext_int(response, "minOffset", address=address),
            max_offset=ext_int(response, "maxOffset", address=address),
            messages=messages,
        )

    async def pull_range(self, mq: MessageQueue, begin: int, end: int, *, limit: int | None = None) -> list[Message]:
        """Messages with queue offsets in [begin, end), following nextBeginOffset."""
        result: list[Message] = []
        offset = begin
        while offset < end and (limit is None or len(result) < limit):
            batch = min(MAX_PULL_BATCH, end - offset)
            pulled = await self.pull(mq, offset, max_nums=batch)
            if pulled.status == "FOUND":
                result += [m for m in pulled.messages if begin <= m.queue_offset < end]
            elif pulled.status == "NO_NEW_MSG":
                break
            if pulled.next_begin_offset <= offset:
                break  # no progress: offset moved below us or the queue ended
            offset = pulled.next_begin_offset
        return result[:limit] if limit is not None else result

    async def consume_queue_positions(self, mq: MessageQueue, index: int, count: int) -> list[int]:
        """Commit-log offsets of up to `count` consume-queue entries of a queue from `index`."""
        address = await self.topology.master_addr(mq.broker_name)
        fields = {"topic": mq.topic, "queueId": mq.queue_id, "index": index, "count": count}
        response = await self.remoting.call(address, RequestCode.QUERY_CONSUME_QUEUE, fields)
        if not response.body:
            return []  # "Index n of q@topic is not exist!": nothing there
        entries = parse_body(response, lambda d: d.get("queueData") or [], what="consume queue", address=address)
        try:
            return [int(entry["physicOffset"]) for entry in entries]
        except (KeyError, TypeError, ValueError):
            raise ProtocolError("consume queue entry without a physicOffset", address=address) from None

    async def read_by_position(self, mq: MessageQueue, begin: int, end: int) -> list[Message]:
        """Messages with queue offsets in [begin, end) of a queue that cannot be pulled; one
        VIEW_MESSAGE_BY_ID per message, pipelined. Entries whose message the commit log no
        longer holds are skipped, as a pull would skip them."""
        address = await self.topology.master_addr(mq.broker_name)
        positions: list[int] = []
        for start in range(begin, end, CONSUME_QUEUE_BATCH):
            positions += await self.consume_queue_positions(mq, start, min(CONSUME_QUEUE_BATCH, end - start))
        view, topic = RequestCode.VIEW_MESSAGE_BY_ID, mq.topic
        answers = await self.remoting.invoke_many([(address, view, {"offset": p, "topic": topic}) for p in positions])
        found = []
        for answer in answers:
            if isinstance(answer, RocketMQError):
                raise answer
            if answer.code != ResponseCode.SUCCESS or not answer.body:
                continue
            try:
                message = decode_messages(answer.body)[0]
            except ProtocolError as exc:
                exc.address = address
                raise
            if message.topic == mq.topic and message.queue_id == mq.queue_id and begin <= message.queue_offset < end:
                found.append(message)
        return sorted(found, key=lambda m: m.queue_offset)

    async def read_one(self, mq: MessageQueue, offset: int) -> Message | None:
        """The message at a queue offset (None: the queue holds none there), pulled, or read by
        position where the topic is write-only (mqadmin queryMsgByOffset pulls one message)."""
        try:
            found = await self.pull_range(mq, offset, offset + 1)
        except NoPermission:
            found = await self.read_by_position(mq, offset, offset + 1)
        return found[0] if found else None

    async def view_offset_id(self, msg_id: str, *, topic: str | None = None) -> Message | None:
        """The message an offset id names: VIEW_MESSAGE_BY_ID at the broker address it holds.

        None when the id is not an offset id of this cluster: not 32/56 hex characters, an
        address that is no broker of the cluster (a client id, UNIQ_KEY, decodes to its client's
        IP), or a commit-log offset where no message starts. The broker reads whatever record
        lies at the offset it is given (DefaultMessageStore.selectOneMessageByOffset), so a
        forged offset inside the log answers bytes that are no message, or another message:
        only a record that decodes and sits exactly at that offset counts."""
        try:
            address, physical_offset = decode_offset_msg_id(msg_id)
        except ValueError:
            return None
        if address not in (await self.topology.cluster_info(max_age=10.0)).all_addresses():
            return None
        fields = {"offset": physical_offset, "topic": topic}  # 5.x: the topic is for ACL 2.0 only
        response = await self.remoting.invoke(address, RequestCode.VIEW_MESSAGE_BY_ID, fields)
        if response.code != ResponseCode.SUCCESS or not response.body:
            return None  # SYSTEM_ERROR "can not find message by the offset"
        try:
            messages = decode_messages(response.body)
        except ProtocolError:
            return None
        if not messages or messages[0].physical_offset != physical_offset:
            return None
        return messages[0]

    async def view(self, msg_id: str, *, topic: str | None = None) -> Message:
        """A message by id. Offset ids are read at the broker they name (when it belongs to
        the cluster); anything else is treated as a client id (UNIQ_KEY), which needs the topic."""
        found = await self.view_offset_id(msg_id, topic=topic)
        if found is not None:
            return found
        if topic is None:
            raise NotFound(ResponseCode.QUERY_NOT_FOUND, f"message {msg_id} not found by offset id; give its topic")
        matches = await self.query_by_unique_key(topic, msg_id)
        if not matches:
            raise NotFound(ResponseCode.QUERY_NOT_FOUND, f"no message {msg_id} in topic {topic}")
        return matches[0]

    async def query_by_key(
        self, topic: str, key: str, *, begin_ms: int = 0, end_ms: int | None = None, max_num: int = KEY_QUERY_MAX
    ) -> list[Message]:
        """Messages of the topic whose KEYS contain `key`, from every broker of the topic; a
        broker that cannot be read raises."""
        return (await self.query_index(topic, key, begin_ms=begin_ms, end_ms=end_ms, max_num=max_num)).strict()

    async def query_by_unique_key(
        self, topic: str, unique_key: str, *, begin_ms: int = 0, end_ms: int | None = None
    ) -> list[Message]:
        return (await self.query_index(topic, unique_key, unique=True, begin_ms=begin_ms, end_ms=end_ms)).strict()

    async def query_index(
        self,
        topic: str,
        key: str,
        *,
        unique: bool = False,
        begin_ms: int = 0,
        end_ms: int | None = None,
        max_num: int = KEY_QUERY_MAX,
    ) -> IndexAnswer:
        """QUERY_MESSAGE on each broker of the topic (its master, or a slave where the master is
        down), as Java's MQAdminImpl.queryMessage: messages of `topic` whose KEYS hold `key`, or
        (`unique`) whose UNIQ_KEY is `key`, stored in [begin_ms, end_ms].

        The broker's index is a hash table keyed by "topic#key" holding store times in whole
        seconds after its file began (IndexFile.putKey, rounded down), and it answers what
        hashes alike: the range is asked a second wider and every answer filtered here. A
        broker answers at most `max_num` messages, the newest first (64 at most,
        maxMsgsNumBatch; 32 for unique keys, defaultQueryMaxNum): one that answers that many
        is named in `capped`. A broker that cannot be read is named in `errors`."""
        route = await self.topology.topic_route(topic)
        end_ms = INDEX_END if end_ms is None else end_ms
        fields = {
            "topic": topic,
            "key": key,
            "maxNum": max_num,
            "beginTimestamp": max(0, begin_ms - INDEX_TIME_GRAIN_MS),
            "endTimestamp": end_ms,
        }
        cap = min(max_num, KEY_QUERY_MAX)
        if unique and self.config.credentials is None:
            # Java sends this flag for unique keys; its only effect is maxNum = defaultQueryMaxNum.
            # Brokers 4.x/5.0 leave it out of the ACL signature and 5.1+ keep it in (for version
            # > 399), so a signed request carrying it fails on one or the other: not sent under ACL.
            fields[UNIQUE_KEY_QUERY] = "true"
            cap = min(cap, UNIQUE_QUERY_MAX)
        targets = sorted(route.read_addrs().items())
        answers = await self.remoting.invoke_many([(a, RequestCode.QUERY_MESSAGE, fields) for _, a in targets])
        result = IndexAnswer()
        for (broker, address), answer in zip(targets, answers, strict=True):
            stored = self._index_answer(broker, address, answer, result)
            if len(stored) >= cap:
                result.capped.append(broker)
            for m in stored:
                matched = m.properties.get("UNIQ_KEY") == key if unique else key in m.keys
                if matched and m.topic == topic and begin_ms <= m.store_timestamp <= end_ms:
                    result.messages.append(Located(broker, m))
        result.messages.sort(key=lambda f: (f.message.store_timestamp, f.broker, f.message.queue_id,
                                            f.message.queue_offset))  # fmt: skip
        return result

    @staticmethod
    def _index_answer(broker: str, address: str, answer, result: IndexAnswer) -> list[Message]:
        if isinstance(answer, RocketMQError):
            result.errors[broker] = answer
            return []
        if answer.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        if answer.code != ResponseCode.SUCCESS:
            result.errors[broker] = broker_error(answer.code, answer.remark, address=address, request="QUERY_MESSAGE")
            return []
        try:
            return decode_messages(answer.body)
        except ProtocolError as exc:
            exc.address = address
            result.errors[broker] = exc
            return exc.partial or []
