"""Actions that change the cluster: offsets, sends, direct consumption, topic and group configs."""

from __future__ import annotations

import asyncio
import itertools
import json

from ..codes import DEFAULT_TOPIC, RequestCode, ResponseCode
from ..errors import BrokerError, NotSupported, ProtocolError, RocketMQError, broker_error
from ..fastjson import pairs
from ..message import decode_offset_msg_id
from ..models import (
    BrokerReset,
    ConsumeMessageDirectlyResult,
    MessageQueue,
    Outgoing,
    ResetOffsetResult,
    SendResult,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRoute,
)
from ..models.topology import Perm
from ..remoting import RemotingClient
from . import sending
from .base import Operations, ext_int, parse_body
from .messages import Messages
from .progress import Progress
from .topology import Topology

ADMIN_PRODUCER_GROUP = "CONSOLE_ADMIN_PRODUCER"
# The broker waits up to 10 s for a client to answer a forwarded call; wait a little longer.
CLIENT_CALL_TIMEOUT = 12.0


class Actions(Operations):
    def __init__(self, remoting: RemotingClient, topology: Topology, progress: Progress, messages: Messages):
        super().__init__(remoting)
        self.topology = topology
        self.progress = progress
        self.messages = messages
        self._round_robin: dict[str, itertools.count] = {}
        self._writable: dict[str, tuple[TopicRoute, list[MessageQueue]]] = {}
        self._server_side_reset: dict[str, bool] = {}

    # offsets

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> bool:
        """Commit an offset for one queue. False when the broker ignored it because a
        server-side reset is pending for that queue. Online consumers overwrite it."""
        address = await self.topology.master_addr(mq.broker_name)
        fields = {"consumerGroup": group, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset}
        response = await self.remoting.call(address, RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        return "previously reset" not in (response.remark or "")

    async def reset_queue_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        """Set one queue of a group to an exact offset through the broker's reset path
        (INVOKE_BROKER_TO_RESET_OFFSET with the 5.x `queueId`/`offset` fields). On a broker with
        server-side reset (5.2+ default) this works whether or not the group is online: the broker
        writes the offset, and ignores commits of older positions while the reset is pending.
        Raises NotSupported on brokers without it (4.x, or useServerSideResetOffset=false)."""
        address = await self.topology.master_addr(mq.broker_name)
        if not await self._uses_server_side_reset(address):
            raise NotSupported(
                ResponseCode.SYSTEM_ERROR,
                f"{mq.broker_name} has no server-side reset (4.x, or useServerSideResetOffset=false): "
                "an exact per-queue reset of an online group is not possible there",
                address=address,
                request="reset queue offset",
            )
        fields = {
            "topic": mq.topic,
            "group": group,
            "timestamp": -1,
            "isForce": True,
            "queueId": mq.queue_id,
            "offset": offset,
        }
        await self.remoting.call(address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)

    async def uses_server_side_reset(self, broker_name: str) -> bool:
        return await self._uses_server_side_reset(await self.topology.master_addr(broker_name))

    async def search_offset(self, mq: MessageQueue, timestamp: int, *, boundary: str = "LOWER") -> int:
        """First offset stored at or after `timestamp` (LOWER), or the last at or before it (UPPER)."""
        address = await self.topology.master_addr(mq.broker_name)
        fields = {"topic": mq.topic, "queueId": mq.queue_id, "timestamp": timestamp, "boundaryType": boundary}
        response = await self.remoting.call(address, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, fields)
        return ext_int(response, "offset", address=address)

    async def reset_offset_by_timestamp(
        self, group: str, topic: str, timestamp: int, *, force: bool = True
    ) -> ResetOffsetResult:
        """Reset a group on a topic to the first message stored at or after `timestamp`
        (ms; -1 means the end of each queue) on every master of the topic.

        Each broker takes its own path (see BrokerReset). A broker that fails is reported
        in the result, after the others were still attempted."""
        route = await self.topology.topic_route(topic, max_age=0)
        masters = route.master_addrs()
        results = await asyncio.gather(
            *(
                self._reset_on_broker(name, addr, group, topic, timestamp, force, route)
                for name, addr in masters.items()
            )
        )
        return ResetOffsetResult(group=group, topic=topic, timestamp=timestamp, brokers=list(results))

    async def _reset_on_broker(
        self, name: str, address: str, group: str, topic: str, timestamp: int, force: bool, route: TopicRoute
    ) -> BrokerReset:
        fields = {"topic": topic, "group": group, "timestamp": timestamp, "isForce": force, "queueId": -1, "offset": -1}
        try:
            response = await self.remoting.invoke(address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)
            if response.code == ResponseCode.SUCCESS:
                offsets = parse_body(response, _reset_offsets, what="reset offset", address=address)
                path = "server" if await self._uses_server_side_reset(address) else "client"
            elif response.code == ResponseCode.CONSUMER_NOT_ONLINE:
                offsets = await self._reset_offline(name, address, group, topic, timestamp, force, route)
                path = "offline"
            else:
                raise broker_error(response.code, response.remark, address=address, request="reset offset")
        except RocketMQError as exc:
            return BrokerReset(broker_name=name, address=address, path="failed", offsets={}, error=str(exc))
        return BrokerReset(broker_name=name, address=address, path=path, offsets=offsets)

    async def _reset_offline(
        self, name: str, address: str, group: str, topic: str, timestamp: int, force: bool, route: TopicRoute
    ) -> dict[MessageQueue, int]:
        # What Java admin does when no client is online: read the current offsets, find the
        # target of each queue, and write it unless it would move forward without force.
        stats = await self.progress.consume_stats(group, address, topic=topic)
        current: dict[MessageQueue, int | None] = {
            mq: w.consumer_offset for mq, w in stats.offsets.items() if mq.topic == topic
        }
        if not current:
            queue_data = route.queue_data(name)
            current = {
                MessageQueue(topic, name, i): None for i in range(queue_data.read_queue_nums if queue_data else 0)
            }
        applied = {}
        for mq, offset in sorted(current.items()):
            if timestamp == -1:
                target = await self.progress.max_offset(mq)
            else:
                target = await self.search_offset(mq, timestamp)
            if force or offset is None or target < offset:
                await self.update_consumer_offset(group, mq, target)
                applied[mq] = target
        return applied

    async def _uses_server_side_reset(self, address: str) -> bool:
        if address not in self._server_side_reset:
            config = await self.topology.broker_config(address)
            self._server_side_reset[address] = config.get("useServerSideResetOffset", "false").lower() == "true"
        return self._server_side_reset[address]

    # messages

    async def send_message(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: list[str] | None = None,
        properties: dict[str, str] | None = None,
        queue: MessageQueue | None = None,
        producer_group: str = ADMIN_PRODUCER_GROUP,
        reconsume_times: int | None = None,
        max_reconsume_times: int | None = None,
        compress: bool = True,
        unique_key: str | None = None,
    ) -> SendResult:
        """SEND_MESSAGE_V2. Also sends to %RETRY%<group> (give reconsume_times and
        max_reconsume_times, and RETRY_TOPIC in properties so the consumer sees the
        original topic)."""
        queue = queue or await self._pick_queue(topic)
        address = await self.topology.master_addr(queue.broker_name)
        props = dict(properties or {})
        if tags:
            props["TAGS"] = tags
        if keys:
            props["KEYS"] = " ".join(keys)
        fields, body = sending.send_fields(
            queue, body, props, unique_key, producer_group, reconsume_times, max_reconsume_times, compress
        )
        response = await self.remoting.call(
            address, RequestCode.SEND_MESSAGE_V2, fields, body, accept=sending.SEND_STATUS
        )
        return sending.send_result(response, queue, props["UNIQ_KEY"], address, 0)

    async def send_messages(
        self, messages: list[Outgoing], *, producer_group: str = ADMIN_PRODUCER_GROUP
    ) -> list[SendResult | RocketMQError]:
        """Many messages, each to the next writable queue of its topic, pipelined through
        `invoke_many` (no coroutine per message); a result or typed error per message, in order.
        Messages for the same queue go as SEND_BATCH_MESSAGE requests of up to BATCH_MESSAGES,
        except to %RETRY% topics, which the broker takes only one by one (SEND_MESSAGE_V2).
        Batched bodies are not compressed (the batch's flag is the message's flag), as in Java.
        This is what a redrive's windows go through."""
        results: list[SendResult | RocketMQError | None] = [None] * len(messages)
        queues: dict[str, list[MessageQueue] | RocketMQError] = {}
        addresses: dict[str, str | RocketMQError] = {}
        prepared: list[sending.Prepared] = []
        for index, m in enumerate(messages):
            try:
                if m.topic not in queues:
                    queues[m.topic] = await sending.or_error(self._writable_queues(m.topic))
                queue = self._next_queue(m.topic, sending.raise_error(queues[m.topic]))
                if queue.broker_name not in addresses:
                    lookup = self.topology.master_addr(queue.broker_name)
                    addresses[queue.broker_name] = await sending.or_error(lookup)
                address = sending.raise_error(addresses[queue.broker_name])
            except RocketMQError as exc:
                results[index] = exc  # this message cannot go; the others still do
                continue
            prepared.append(sending.Prepared(index, m, queue, address))
        requests, plans = sending.requests(prepared, producer_group)
        for answer, plan in zip(await self.remoting.invoke_many(requests), plans, strict=True):
            for index, result in sending.results(answer, plan):
                results[index] = result
        return results

    async def _pick_queue(self, topic: str) -> MessageQueue:
        return self._next_queue(topic, await self._writable_queues(topic))

    async def _writable_queues(self, topic: str) -> list[MessageQueue]:
        route = await self.topology.topic_route(topic)
        cached = self._writable.get(topic)
        if cached is not None and cached[0] is route:
            return cached[1]  # the same (cached) route: the same queues, without rebuilding them per send
        masters = route.master_addrs()
        queues = [
            MessageQueue(topic, q.broker_name, i)
            for q in sorted(route.queue_datas, key=lambda q: q.broker_name)
            if Perm.writable(q.perm) and q.broker_name in masters
            for i in range(q.write_queue_nums)
        ]
        self._writable[topic] = (route, queues)
        return queues

    def _next_queue(self, topic: str, queues: list[MessageQueue]) -> MessageQueue:
        if not queues:
            raise BrokerError(ResponseCode.NO_PERMISSION, f"topic {topic} has no writable queue on a live master")
        counter = self._round_robin.setdefault(topic, itertools.count())
        return queues[next(counter) % len(queues)]

    async def consume_message_directly(
        self, group: str, client_id: str, msg_id: str, *, topic: str | None = None
    ) -> ConsumeMessageDirectlyResult:
        """Ask one online client to run its listener on a stored message. Only the storing
        broker can do this, so a client id (UNIQ_KEY) is first resolved to the offset id."""
        known = (await self.topology.cluster_info(max_age=10.0)).all_addresses()
        try:
            address, _ = decode_offset_msg_id(msg_id)
        except ValueError:
            address = None
        if address not in known:
            message = await self.messages.view(msg_id, topic=topic)
            msg_id, address = message.offset_msg_id, message.store_host
            topic = topic or message.topic
        fields = {"consumerGroup": group, "clientId": client_id, "msgId": msg_id, "topic": topic}
        response = await self.remoting.call(
            address, RequestCode.CONSUME_MESSAGE_DIRECTLY, fields, timeout=CLIENT_CALL_TIMEOUT
        )
        return parse_body(response, ConsumeMessageDirectlyResult.from_wire, what="consume result", address=address)

    # configs

    async def create_or_update_topic(self, config: TopicConfig, broker_addrs: list[str]) -> None:
        """UPDATE_AND_CREATE_TOPIC on each given broker (a full overwrite of the config)."""
        fields = {
            "topic": config.topic_name,
            "defaultTopic": DEFAULT_TOPIC,
            "readQueueNums": config.read_queue_nums,
            "writeQueueNums": config.write_queue_nums,
            "perm": config.perm,
            "topicFilterType": config.topic_filter_type,
            "topicSysFlag": config.topic_sys_flag,
            "order": config.order,
            "attributes": ",".join(f"+{k}={v}" for k, v in config.attributes.items()) or None,
        }
        for address in broker_addrs:
            await self.remoting.call(address, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        self.topology.forget_route(config.topic_name)

    async def create_or_update_subscription_group(
        self, config: SubscriptionGroupConfig, broker_addrs: list[str]
    ) -> None:
        body = json.dumps(config.to_wire(), separators=(",", ":")).encode()
        for address in broker_addrs:
            await self.remoting.call(address, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)

    async def delete_subscription_group(self, group: str, broker_addr: str, *, clean_offset: bool = True) -> None:
        """DELETE_SUBSCRIPTIONGROUP on one broker: the group's config, and with `clean_offset`
        every committed offset it has there (what `mqadmin deleteSubGroup -r true` does). The
        broker has no request that removes one topic's offsets of a group."""
        fields = {"groupName": group, "cleanOffset": "true" if clean_offset else "false"}
        await self.remoting.call(broker_addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, fields)

    async def set_pop_mode(self, topic: str, group: str, broker_addrs: list[str], *, share: int = 8) -> None:
        """Switch a group's remoting clients to POP for a topic (what `mqadmin setConsumeMode -m
        POP` does): the brokers then hand them messages per pop request."""
        body = {"topic": topic, "consumerGroup": group, "mode": "POP", "popShareQueueNum": share}
        for address in broker_addrs:
            await self.remoting.call(address, RequestCode.SET_MESSAGE_REQUEST_MODE, body=json.dumps(body).encode())

    async def make_topic_readable(self, topic: str) -> list[str]:
        """Add the read permission where a topic lacks it (DLQs created by brokers before
        4.9.2 are write-only). Returns the broker names that were changed."""
        route = await self.topology.topic_route(topic, max_age=0)
        masters = route.master_addrs()
        changed = []
        for queue_data in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if Perm.readable(queue_data.perm) or queue_data.broker_name not in masters:
                continue
            address = masters[queue_data.broker_name]
            current = (await self.topology.topic_configs(address)).get(topic)
            if current is None:
                raise ProtocolError(f"broker {queue_data.broker_name} routes {topic} but has no config for it")
            current.perm |= Perm.READ
            await self.create_or_update_topic(current, [address])
            changed.append(queue_data.broker_name)
        return changed


def _reset_offsets(data: dict) -> dict[MessageQueue, int]:
    table = data.get("offsetTable") or {}
    if isinstance(table, list) and all(isinstance(e, dict) for e in table):
        # ResetOffsetBodyForC: a list of {brokerName, offset, queueId, topic}
        return {MessageQueue.from_wire(e): int(e["offset"]) for e in table}
    return {MessageQueue.from_wire(k): int(v) for k, v in pairs(table)}
