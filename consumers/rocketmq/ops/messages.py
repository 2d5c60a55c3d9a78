"""Message reads: pull a queue range, view by id, query by key.

Pulls go out as TOOLS_CONSUMER with only the subscription flag set: no offset is committed
and no application group's pull offset or pending reset is touched.
"""

from __future__ import annotations

import asyncio

from ..codes import TOOLS_CONSUMER_GROUP, RequestCode, ResponseCode
from ..errors import NotFound, ProtocolError
from ..message import Message, decode_messages, decode_offset_msg_id
from ..models import MessageQueue, PullResult
from .base import Operations, ext_int

PULL_FLAG_SUBSCRIPTION = 0x4
MAX_PULL_BATCH = 32  # the broker caps a pull at 32 messages from page cache anyway

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
