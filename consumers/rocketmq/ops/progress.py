"""Progress: consume stats, connections, running info, offsets of queues and groups."""

from __future__ import annotations

from ..codes import RequestCode, ResponseCode
from ..errors import ProtocolError, RocketMQError, broker_error
from ..models import (
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    MessageQueue,
    TopicStatsTable,
)
from ..remoting import RemotingClient
from .base import Operations, ext_int, parse_body, typed_answer
from .topology import Topology


class Progress(Operations):
    def __init__(self, remoting: RemotingClient, topology: Topology):
        super().__init__(remoting)
        self.topology = topology

    async def consume_stats(
        self, group: str, broker_addr: str, *, topic: str | None = None, timeout: float | None = None
    ) -> ConsumeStats:
        """GET_CONSUME_STATS on one broker: the group's offsets there (retry topic included)."""
        fields = {"consumerGroup": group, "topic": topic}
        response = await self.remoting.call(broker_addr, RequestCode.GET_CONSUME_STATS, fields, timeout=timeout)
        return parse_body(response, ConsumeStats.from_wire, what="consume stats", address=broker_addr)

    # Batches: many targets pipelined at once (see RemotingClient.invoke_many); each result
    # is the typed answer or the typed error of that target alone.

    async def consume_stats_many(
        self, targets: list[tuple[str, str]], topics: dict[str, dict[str, set[str]]] | None = None
    ) -> list[ConsumeStats | RocketMQError]:
        """(group, broker address) pairs -> each group's consume stats on that broker.

        Asked without a topic, a broker finds the group's topics by scanning its whole offset
        table (ConsumerOffsetManager.whichTopicByConsumer), so a poll of N groups costs it N
        scans of N entries. With `topics` (broker address -> group -> topics, from
        offset_topics_many) each topic is asked by name and the answers merged; a group the
        dump does not name there is asked the old way."""
        requests, owners = [], []
        for index, (group, address) in enumerate(targets):
            named = sorted((topics or {}).get(address, {}).get(group, ()))
            for topic in named or [None]:
                requests.append((address, {"consumerGroup": group, "topic": topic}))
                owners.append(index)
        answers = await self._many(RequestCode.GET_CONSUME_STATS, requests, ConsumeStats.from_wire, "consume stats")
        merged: list[ConsumeStats | RocketMQError | None] = [None] * len(targets)
        for index, answer in zip(owners, answers, strict=True):
            held = merged[index]
            if held is None or (isinstance(answer, RocketMQError) and not isinstance(held, RocketMQError)):
                merged[index] = answer  # the first answer, or the first error (a partial merge is no answer)
            elif not isinstance(held, RocketMQError):
                merged[index] = held.merge(answer)
        return merged

    async def offset_topics_many(self, addresses: list[str]) -> list[dict[str, set[str]] | RocketMQError]:
        """Per broker: group -> the topics it has offsets for there, from one dump of the
        broker's offset table (GET_ALL_CONSUMER_OFFSET, keys "topic@group"). Only its keys are
        used: the queue ids inside stay strings, which reads the dump at about json's speed."""

        def topics_by_group(data: dict) -> dict[str, set[str]]:
            found: dict[str, set[str]] = {}
            for key in data.get("offsetTable") or {}:
                topic, _, group = str(key).partition("@")
                if group:
                    found.setdefault(group, set()).add(topic)
            return found

        requests = [(a, {}) for a in addresses]
        code = RequestCode.GET_ALL_CONSUMER_OFFSET
        return await self._many(code, requests, topics_by_group, "consumer offsets", numeric_keys=False)

    async def consumer_connections_many(
        self, targets: list[tuple[str, str]]
    ) -> list[ConsumerConnection | RocketMQError]:
        """(group, broker address) pairs -> the group's clients as that broker knows them
        (ConsumerNotOnline when it knows none)."""
        requests = [(a, {"consumerGroup": g}) for g, a in targets]
        code = RequestCode.GET_CONSUMER_CONNECTION_LIST
        return await self._many(code, requests, ConsumerConnection.from_wire, "consumer connection")

    async def topic_stats_many(self, targets: list[tuple[str, str]]) -> list[TopicStatsTable | RocketMQError]:
        """(topic, broker address) pairs -> min and max offsets of the topic's queues there."""
        requests = [(a, {"topic": t}) for t, a in targets]
        return await self._many(RequestCode.GET_TOPIC_STATS_INFO, requests, TopicStatsTable.from_wire, "topic stats")

    async def running_info_many(
        self, targets: list[tuple[str, str, str]], *, timeout: float | None = None, jstack: bool = False
    ) -> list[ConsumerRunningInfo | RocketMQError]:
        """(group, client id, broker address) -> what each client reports about itself (with its
        threads' stacks when `jstack`)."""
        flag = "true" if jstack else "false"
        requests = [(a, {"consumerGroup": g, "clientId": c, "jstackEnable": flag}) for g, c, a in targets]
        code = RequestCode.GET_CONSUMER_RUNNING_INFO
        return await self._many(code, requests, ConsumerRunningInfo.from_wire, "consumer running info", timeout=timeout)

    async def consumer_offsets_many(
        self, targets: list[tuple[str, MessageQueue, str]]
    ) -> list[int | None | RocketMQError]:
        """(group, queue, broker address) -> the group's committed offset on the queue; None when
        it has none there (QUERY_NOT_FOUND, asked with setZeroIfNotFound=false: 5.x would
        otherwise answer 0 for a queue whose first message is still stored)."""
        code = RequestCode.QUERY_CONSUMER_OFFSET
        requests = [
            (a, code, {"consumerGroup": g, "topic": mq.topic, "queueId": mq.queue_id, "setZeroIfNotFound": "false"})
            for g, mq, a in targets
        ]
        answers = await self.remoting.invoke_many(requests)
        found: list[int | None | RocketMQError] = []
        for (_, _, address), answer in zip(targets, answers, strict=True):
            if isinstance(answer, RocketMQError):
                found.append(answer)
            elif answer.code == ResponseCode.QUERY_NOT_FOUND:
                found.append(None)
            elif answer.code != ResponseCode.SUCCESS:
                found.append(broker_error(answer.code, answer.remark, address=address, request=code.name))
            else:
                try:
                    found.append(ext_int(answer, "offset", address=address))
                except ProtocolError as exc:
                    found.append(exc)
        return found

    async def groups_of_topic_many(self, topic: str, addresses: list[str]) -> list[list[str] | RocketMQError]:
        """Per broker: the groups subscribed to or holding offsets for the topic there."""
        requests = [(a, {"topic": topic}) for a in addresses]
        build = lambda d: sorted(str(g) for g in d.get("groupList") or [])  # noqa: E731
        return await self._many(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, requests, build, "group list")

    async def _many(
        self, code: int, requests: list[tuple[str, dict]], build, what: str, *, timeout=None, numeric_keys=True
    ) -> list:
        answers = await self.remoting.invoke_many([(a, code, fields) for a, fields in requests], timeout=timeout)
        return [
            typed_answer(answer, address, build, what=what, code=code, numeric_keys=numeric_keys)
            for answer, (address, _) in zip(answers, requests, strict=True)
        ]

    async def consumer_connection(self, group: str, broker_addr: str) -> ConsumerConnection:
        """Online clients of a group as one broker knows them; raises ConsumerNotOnline."""
        response = await self.remoting.call(
            broker_addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}
        )
        return parse_body(response, ConsumerConnection.from_wire, what="consumer connection", address=broker_addr)

    async def consumer_running_info(
        self, group: str, client_id: str, broker_addr: str, *, jstack: bool = False, timeout: float | None = None
    ) -> ConsumerRunningInfo:
        """Ask one client, through a broker it is connected to, for its running info."""
        fields = {"consumerGroup": group, "clientId": client_id, "jstackEnable": jstack}
        response = await self.remoting.call(broker_addr, RequestCode.GET_CONSUMER_RUNNING_INFO, fields, timeout=timeout)
        return parse_body(response, ConsumerRunningInfo.from_wire, what="consumer running info", address=broker_addr)

    async def topics_of_group(self, group: str, broker_addr: str) -> list[str]:
        """Topics the group has offsets for on this broker (QUERY_TOPICS_BY_CONSUMER)."""
        response = await self.remoting.call(broker_addr, RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": group})
        return parse_body(response, lambda d: sorted(str(t) for t in d.get("topicList") or []), what="topic list")

    async def groups_of_topic(self, topic: str, broker_addr: str) -> list[str]:
        """Groups subscribed to or holding offsets for the topic on this broker."""
        response = await self.remoting.call(broker_addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
        return parse_body(response, lambda d: sorted(str(g) for g in d.get("groupList") or []), what="group list")

    async def topic_stats(self, topic: str, broker_addr: str) -> TopicStatsTable:
        """Min and max offset and last update time of every queue of a topic on one broker."""
        response = await self.remoting.call(broker_addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
        return parse_body(response, TopicStatsTable.from_wire, what="topic stats", address=broker_addr)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self._queue_value(mq, RequestCode.GET_MIN_OFFSET, "offset")

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self._queue_value(mq, RequestCode.GET_MAX_OFFSET, "offset", committed="true")

    async def earliest_store_time(self, mq: MessageQueue) -> int | None:
        """Store time (ms) of the oldest message still in the queue; None if it is empty."""
        value = await self._queue_value(mq, RequestCode.GET_EARLIEST_MSG_STORETIME, "timestamp")
        return None if value < 0 else value

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        """The group's committed offset on one queue; None when it has never committed one."""
        address = await self.topology.master_addr(mq.broker_name)
        fields = {
            "consumerGroup": group,
            "topic": mq.topic,
            "queueId": mq.queue_id,
            "setZeroIfNotFound": "false",
        }
        response = await self.remoting.call(
            address,
            RequestCode.QUERY_CONSUMER_OFFSET,
            fields,
            accept=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return ext_int(response, "offset", address=address)

    async def _queue_value(self, mq: MessageQueue, code: int, key: str, **extra: str) -> int:
        address = await self.topology.master_addr(mq.broker_name)
        response = await self.remoting.call(address, code, {"topic": mq.topic, "queueId": mq.queue_id, **extra})
        if key not in response.ext_fields:
            raise ProtocolError(f"{RequestCode(code).name} answer has no {key!r}", address=address)
        return ext_int(response, key, address=address)
