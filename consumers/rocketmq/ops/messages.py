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

import asyncio

from ..codes import TOOLS_CONSUMER_GROUP, RequestCode, ResponseCode
from ..errors import NotFound, ProtocolError, RocketMQError
from ..message import Message, decode_messages, decode_offset_msg_id
from ..models import MessageQueue, PullResult
from .base import Operations, ext_int, parse_body

PULL_FLAG_SUBSCRIPTION = 0x4
MAX_PULL_BATCH = 32  # the broker caps a pull at 32 messages from page cache anyway
CONSUME_QUEUE_BATCH = 256  # consume-queue entries per QUERY_CONSUME_QUEUE (about 80 bytes each)

_PULL_STATUS = {
    ResponseCode.SUCCESS: "FOUND",
    ResponseCode.PULL_NOT_FOUND: "NO_NEW_MSG",
    ResponseCode.PULL_RETRY_IMMEDIATELY: "NO_MATCHED_MSG",
    ResponseCode.PULL_OFFSET_MOVED: "OFFSET_ILLEGAL",
}


class Messages(Operations):
    async def pull(self, mq: MessageQueue, offset: int, *, max_nums: int = MAX_PULL_BATCH) -> PullResult:
        address = await self.client.topology.master_addr(mq.broker_name)
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
        address = await self.client.topology.master_addr(mq.broker_name)
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
        address = await self.client.topology.master_addr(mq.broker_name)
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

    async def view(self, msg_id: str, *, topic: str | None = None) -> Message:
        """A message by id. Offset ids are read at the broker they name (when it belongs to
        the cluster); anything else is treated as a client id (UNIQ_KEY), which needs the topic."""
        try:
            address, physical_offset = decode_offset_msg_id(msg_id)
        except ValueError:
            address = None
        if address is not None:
            known = (await self.client.topology.cluster_info(max_age=10.0)).all_addresses()
            if address in known:
                fields = {"offset": physical_offset, "topic": topic}
                response = await self.remoting.invoke(address, RequestCode.VIEW_MESSAGE_BY_ID, fields)
                if response.code == ResponseCode.SUCCESS:
                    messages = decode_messages(response.body)
                    if messages:
                        return messages[0]
        if topic is None:
            raise NotFound(ResponseCode.QUERY_NOT_FOUND, f"message {msg_id} not found by offset id; give its topic")
        found = await self.query_by_unique_key(topic, msg_id)
        if not found:
            raise NotFound(ResponseCode.QUERY_NOT_FOUND, f"no message {msg_id} in topic {topic}")
        return found[0]

    async def query_by_key(
        self, topic: str, key: str, *, begin_ms: int = 0, end_ms: int | None = None, max_num: int = 64
    ) -> list[Message]:
        """Messages of the topic whose KEYS contain `key`, from every master of the topic."""
        found = await self._query(topic, key, begin_ms, end_ms, max_num)
        return [m for m in found if key in m.keys and m.topic == topic]

    async def query_by_unique_key(
        self, topic: str, unique_key: str, *, begin_ms: int = 0, end_ms: int | None = None
    ) -> list[Message]:
        found = await self._query(topic, unique_key, begin_ms, end_ms, 32)
        return [m for m in found if m.properties.get("UNIQ_KEY") == unique_key and m.topic == topic]

    async def _query(self, topic: str, key: str, begin_ms: int, end_ms: int | None, max_num: int) -> list[Message]:
        route = await self.client.topology.topic_route(topic)
        end_ms = end_ms if end_ms is not None else 2**62
        fields = {"topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin_ms, "endTimestamp": end_ms}

        async def one(address: str) -> list[Message]:
            response = await self.remoting.call(
                address,
                RequestCode.QUERY_MESSAGE,
                fields,
                accept=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
            )
            return decode_messages(response.body) if response.code == ResponseCode.SUCCESS else []

        answers = await asyncio.gather(*(one(a) for a in route.master_addrs().values()), return_exceptions=True)
        messages: dict[tuple[str, int], Message] = {}
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
            for message in answer:
                messages[(message.store_host, message.physical_offset)] = message
        return sorted(messages.values(), key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))
