"""A small fake RocketMQ cluster at the byte level: one fake server per broker, the first also
answering as the name server, over an in-memory store of messages, offsets, connections and
running info. Enough of the request codes for message lookups and tracks; every request is
kept (`requests`) so a test can check exactly what was sent.

Its QUERY_MESSAGE answers as the broker's index does: everything filed under the same hash
slot, capped at maxNum (so a test can add colliding messages with `collide`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from consumers.rocketmq.codes import RequestCode, ResponseCode
from tests.support.fake_broker import FakeBroker, response_frame
from tests.support.wire import encode_stored_message


@dataclass
class Stored:
    topic: str
    broker: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    store_ms: int
    properties: dict[str, str]
    body: bytes = b"body"
    reconsume_times: int = 0
    collide: bool = False  # answered to every index query on its broker (a hash collision)


@dataclass
class FakeCluster:
    brokers: tuple[str, ...] = ("broker-a",)
    queues: dict[str, int] = field(default_factory=dict)  # topic -> queues per broker
    messages: list[Stored] = field(default_factory=list)
    offsets: dict[tuple[str, str, str, int], int] = field(default_factory=dict)  # (group, topic, broker, qid)
    connections: dict[str, dict] = field(default_factory=dict)  # group -> connection body (every broker)
    consumers_of: dict[str, list[str]] = field(default_factory=dict)  # topic -> groups (every broker)
    running: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (group, client) -> running info body
    pop_modes: dict[str, dict[str, str]] = field(default_factory=dict)  # topic -> group -> mode
    failing: set[tuple[str, int]] = field(default_factory=set)  # (broker, code): answered SYSTEM_ERROR
    # VIEW_MESSAGE_BY_ID at an offset where no message starts: the broker reads whatever record
    # lies there; here, the next message (True) or nothing (False)
    view_reads_on: bool = False
    requests: list[tuple[str, object]] = field(default_factory=list)  # (broker, RemotingCommand)
    servers: dict[str, FakeBroker] = field(default_factory=dict)
    addresses: dict[str, str] = field(default_factory=dict)  # kept after stop()

    async def start(self) -> FakeCluster:
        for name in self.brokers:
            self.servers[name] = await FakeBroker(self._handler(name)).start()
            self.addresses[name] = self.servers[name].address
        return self

    async def stop(self) -> None:
        for server in self.servers.values():
            await server.stop()

    @property
    def namesrv(self) -> str:
        return self.servers[self.brokers[0]].address

    def address(self, broker: str) -> str:
        return self.addresses[broker]

    def add(self, topic: str, broker: str, queue_id: int, properties: dict[str, str], **options) -> Stored:
        """A message at the next offset of its queue and of its broker's commit log."""
        offset = sum(1 for m in self.messages if (m.topic, m.broker, m.queue_id) == (topic, broker, queue_id))
        physical = 1000 * (1 + sum(1 for m in self.messages if m.broker == broker))
        options.setdefault("store_ms", 1_700_000_000_000 + 1000 * len(self.messages))
        stored = Stored(topic, broker, queue_id, offset, physical, properties=properties, **options)
        self.messages.append(stored)
        self.queues.setdefault(topic, max(queue_id + 1, self.queues.get(topic, 0)))
        self.queues[topic] = max(self.queues[topic], queue_id + 1)
        return stored

    def encode(self, m: Stored) -> bytes:
        host, port = self.address(m.broker).split(":")
        return encode_stored_message(
            topic=m.topic, body=m.body, properties=m.properties, queue_id=m.queue_id, queue_offset=m.queue_offset,
            physical_offset=m.physical_offset, store_timestamp=m.store_ms, store_host=(host, int(port)),
            reconsume_times=m.reconsume_times,
        )  # fmt: skip

    def sent(self, code: int) -> list[tuple[str, dict]]:
        return [(broker, r.ext_fields) for broker, r in self.requests if r.code == code]

    def _handler(self, broker: str):
        async def handle(server, request, writer):
            self.requests.append((broker, request))
            if (broker, request.code) in self.failing:
                writer.write(response_frame(request, code=ResponseCode.SYSTEM_ERROR, remark="injected failure"))
                return
            code, ext, body, remark = self._answer(broker, request.code, request.ext_fields)
            writer.write(response_frame(request, code=code, ext=ext, body=body, remark=remark))

        return handle

    def _answer(self, broker: str, code: int, ext: dict) -> tuple[int, dict | None, bytes, str | None]:
        handler = getattr(self, f"_on_{RequestCode(code).name.lower()}", None)
        if handler is None:
            return ResponseCode.REQUEST_CODE_NOT_SUPPORTED, None, b"", f"request type {code} not supported"
        return handler(broker, ext)

    @staticmethod
    def _json(data) -> tuple[int, None, bytes, None]:
        return ResponseCode.SUCCESS, None, json.dumps(data).encode(), None

    def _on_get_broker_cluster_info(self, broker, ext):
        table = {b: {"brokerName": b, "cluster": "C", "brokerAddrs": {"0": self.address(b)}} for b in self.brokers}
        return self._json({"brokerAddrTable": table, "clusterAddrTable": {"C": list(self.brokers)}})

    def _on_get_routeinfo_by_topic(self, broker, ext):
        topic = ext["topic"]
        if topic not in self.queues:
            return ResponseCode.TOPIC_NOT_EXIST, None, b"", f"No topic route info in name server for the topic: {topic}"
        n = self.queues[topic]
        return self._json({
            "queueDatas": [{"brokerName": b, "readQueueNums": n, "writeQueueNums": n, "perm": 6} for b in self.brokers],
            "brokerDatas": [{"brokerName": b, "cluster": "C", "brokerAddrs": {"0": self.address(b)}}
                            for b in self.brokers],
        })  # fmt: skip

    def _on_get_all_topic_list_from_nameserver(self, broker, ext):
        return self._json({"topicList": sorted(self.queues)})

    def _on_view_message_by_id(self, broker, ext):
        wanted = int(ext["offset"])
        for m in sorted((m for m in self.messages if m.broker == broker), key=lambda m: m.physical_offset):
            if m.physical_offset == wanted or self.view_reads_on and m.physical_offset > wanted:
                return ResponseCode.SUCCESS, None, self.encode(m), None
        return ResponseCode.SYSTEM_ERROR, None, b"", f"can not find message by the offset, {ext['offset']}"

    def _on_query_message(self, broker, ext):
        topic, key, cap = ext["topic"], ext["key"], int(ext["maxNum"])
        begin, end = int(ext["beginTimestamp"]), int(ext["endTimestamp"])
        if ext.get("_UNIQUE_KEY_QUERY") == "true":
            cap = 32
        found = [
            m for m in self.messages
            if m.broker == broker and begin <= m.store_ms <= end and (m.collide or m.topic == topic and (
                m.properties.get("UNIQ_KEY") == key or key in m.properties.get("KEYS", "").split(" ")))
        ]  # fmt: skip
        found = sorted(found, key=lambda m: -m.store_ms)[: min(cap, 64)]  # the newest first
        if not found:
            return ResponseCode.QUERY_NOT_FOUND, None, b"", "can not find message, maybe time range not correct"
        ext = {"indexLastUpdateTimestamp": "0", "indexLastUpdatePhyoffset": "0"}
        return (
            ResponseCode.SUCCESS,
            ext,
            b"".join(self.encode(m) for m in sorted(found, key=lambda m: m.store_ms)),
            None,
        )

    def _queue(self, broker, ext) -> list[Stored]:
        key = (ext["topic"], broker, int(ext["queueId"]))
        return [m for m in self.messages if (m.topic, m.broker, m.queue_id) == key]

    def _on_pull_message(self, broker, ext):
        queue = self._queue(broker, ext)
        start, count = int(ext["queueOffset"]), int(ext["maxMsgNums"])
        found = [m for m in queue if start <= m.queue_offset < start + count]
        bounds = {"minOffset": "0", "maxOffset": str(len(queue)), "suggestWhichBrokerId": "0"}
        if not found:
            return ResponseCode.PULL_NOT_FOUND, {**bounds, "nextBeginOffset": str(start)}, b"", "OFFSET_OVERFLOW_ONE"
        ext = {**bounds, "nextBeginOffset": str(found[-1].queue_offset + 1)}
        return ResponseCode.SUCCESS, ext, b"".join(self.encode(m) for m in found), "FOUND"

    def _on_get_max_offset(self, broker, ext):
        return ResponseCode.SUCCESS, {"offset": str(len(self._queue(broker, ext)))}, b"", None

    def _on_get_min_offset(self, broker, ext):
        return ResponseCode.SUCCESS, {"offset": "0"}, b"", None

    def _on_search_offset_by_timestamp(self, broker, ext):
        queue = self._queue(broker, ext)
        at = next((m.queue_offset for m in queue if m.store_ms >= int(ext["timestamp"])), len(queue))
        return ResponseCode.SUCCESS, {"offset": str(at)}, b"", None

    def _on_query_consumer_offset(self, broker, ext):
        key = (ext["consumerGroup"], ext["topic"], broker, int(ext["queueId"]))
        if key not in self.offsets:
            return (
                ResponseCode.QUERY_NOT_FOUND,
                None,
                b"",
                "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
            )
        return ResponseCode.SUCCESS, {"offset": str(self.offsets[key])}, b"", None

    def _on_get_consumer_connection_list(self, broker, ext):
        group = ext["consumerGroup"]
        if group not in self.connections:
            return ResponseCode.CONSUMER_NOT_ONLINE, None, b"", f"the consumer group[{group}] not online"
        return self._json(self.connections[group])

    def _on_query_topic_consume_by_who(self, broker, ext):
        return self._json({"groupList": self.consumers_of.get(ext["topic"], [])})

    def _on_get_all_message_request_mode(self, broker, ext):
        modes = {t: {g: {"mode": m, "popShareQueueNum": 0} for g, m in groups.items()}
                 for t, groups in self.pop_modes.items()}  # fmt: skip
        return self._json({"messageRequestModeMap": modes})

    def _on_get_consumer_running_info(self, broker, ext):
        key = (ext["consumerGroup"], ext["clientId"])
        if key not in self.running:
            return ResponseCode.SYSTEM_ERROR, None, b"", f"The Consumer <{key[0]}> <{key[1]}> not online"
        return ResponseCode.SUCCESS, None, self.running[key], None


def connection(topic: str, expression: str = "*", *, clients=("c1",), model="CLUSTERING", kind="TAG",
               consume_type="CONSUME_PASSIVELY") -> dict:  # fmt: skip
    """A consumer connection body as a broker sends it (GET_CONSUMER_CONNECTION_LIST)."""
    tags = [] if expression.strip() in ("", "*") else [t.strip() for t in expression.split("||")]
    return {
        "connectionSet": [{"clientId": c, "clientAddr": "127.0.0.1:50000", "language": "JAVA", "version": 479}
                          for c in clients],
        "subscriptionTable": {topic: {"topic": topic, "subString": expression, "expressionType": kind,
                                      "tagsSet": tags, "codeSet": [], "subVersion": 1}},
        "consumeType": consume_type, "messageModel": model, "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
    }  # fmt: skip


def running_info(commits: dict[tuple[str, str, int], int]) -> bytes:
    """A client's running info as fastjson writes it (mqTable keyed by queue objects), with its
    commit offset on each (topic, broker, queue)."""
    entries = ",".join(
        json.dumps({"brokerName": b, "queueId": q, "topic": t}, separators=(",", ":"))
        + ":" + json.dumps({"commitOffset": o, "cachedMsgCount": 0, "droped": False})
        for (t, b, q), o in commits.items()
    )  # fmt: skip
    return ('{"mqTable":{' + entries + '},"properties":{"messageModel":"BROADCASTING"},"statusTable":{},'
            '"subscriptionSet":[]}').encode()  # fmt: skip
