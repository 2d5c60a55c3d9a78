"""Send requests built by hand-checked rules: which messages share a SEND_BATCH_MESSAGE, the
bytes of a batch record, and which answer belongs to which message. The real broker's view of
the same requests is in test_actions.py."""

from __future__ import annotations

import struct
import zlib

from consumers.rocketmq.codes import RequestCode, ResponseCode
from consumers.rocketmq.errors import BrokerBusy
from consumers.rocketmq.frame import RemotingCommand
from consumers.rocketmq.models import MessageQueue, Outgoing
from consumers.rocketmq.ops import sending

BROKER = "127.0.0.1:10911"


def _prepared(messages: list[tuple[str, int, bytes]]) -> list[sending.Prepared]:
    """(topic, queue id, body) each; keys are the message's place, as 32 hex digits."""
    return [
        sending.Prepared(
            i,
            Outgoing(topic, body, {"KEYS": f"k{i}"}, unique_key=f"{i:032X}"),
            MessageQueue(topic, "broker-a", qid),
            BROKER,
        )  # fmt: skip
        for i, (topic, qid, body) in enumerate(messages)
    ]


def _records(body: bytes) -> list[tuple[int, bytes, dict[str, str]]]:
    """Walk a batch body by its documented layout: (flag, body, properties) per record."""
    out, at = [], 0
    while at < len(body):
        total, magic, crc, flag, length = struct.unpack_from(">iiiii", body, at)
        assert (magic, crc) == (0, 0)
        payload = body[at + 20 : at + 20 + length]
        (plen,) = struct.unpack_from(">H", body, at + 20 + length)
        text = body[at + 22 + length : at + 22 + length + plen].decode()
        assert total == 22 + length + plen  # the record's own size covers exactly these bytes
        props = dict(pair.split("\x01") for pair in text.split("\x02") if pair)
        out.append((flag, payload, props))
        at += total
    return out


def test_messages_to_one_queue_share_batches_of_64_and_retry_topics_go_alone():
    # 130 to queue 0 (64 + 64 + 2), 3 to queue 1, 2 to a retry topic
    plan = [("T", 0, b"a")] * 130 + [("T", 1, b"b")] * 3 + [("%RETRY%G", 0, b"r")] * 2
    requests, plans = sending.requests(_prepared(plan), "PG")

    codes = [code for _, code, _, _ in requests]
    assert codes == [RequestCode.SEND_MESSAGE_V2] * 2 + [RequestCode.SEND_BATCH_MESSAGE] * 4
    assert [len(p.sent) for p in plans] == [1, 1, 64, 64, 2, 3]
    # every message exactly once, with its own key
    assert sorted(prep.index for p in plans for prep, _ in p.sent) == list(range(135))
    assert all(key == f"{prep.index:032X}" for p in plans for prep, key in p.sent)


def test_a_batch_record_carries_each_messages_own_properties_and_the_batch_none():
    requests, _ = sending.requests(_prepared([("T", 2, b"one"), ("T", 2, b"two!")]), "PG")
    (address, code, fields, body) = requests[0]
    assert (address, code) == (BROKER, RequestCode.SEND_BATCH_MESSAGE)
    assert (fields["b"], fields["e"], fields["m"], fields["i"], fields["f"]) == ("T", "2", "true", "", "0")
    assert _records(body) == [
        (0, b"one", {"KEYS": "k0", "UNIQ_KEY": "0" * 32}),
        (0, b"two!", {"KEYS": "k1", "UNIQ_KEY": "0" * 31 + "1"}),
    ]


def test_bodies_over_a_megabyte_go_alone_and_compressed():
    big = b"x" * (sending.BATCH_BYTES + 1)
    requests, plans = sending.requests(_prepared([("T", 0, b"small"), ("T", 0, big)]), "PG")
    single = [r for r in requests if r[1] == RequestCode.SEND_MESSAGE_V2]
    assert len(single) == 1 and [len(p.sent) for p in plans] == [1, 1]
    _, _, fields, body = single[0]
    assert int(fields["f"]) & 0x1 and zlib.decompress(body) == big


def test_batches_close_before_a_megabyte():
    body = b"y" * (300 * 1024)  # three fit, the fourth would pass 1 MiB
    _, plans = sending.requests(_prepared([("T", 0, body)] * 7), "PG")
    assert [len(p.sent) for p in plans] == [3, 3, 1]


def test_each_message_of_a_batch_gets_its_own_offset_id_and_queue_offset():
    _, plans = sending.requests(_prepared([("T", 5, b"a"), ("T", 5, b"b"), ("T", 5, b"c")]), "PG")
    answer = RemotingCommand(
        ResponseCode.SUCCESS, ext_fields={"msgId": "ID0,ID1,ID2", "queueId": "5", "queueOffset": "40"}
    )
    got = list(sending.results(answer, plans[0]))
    assert [(i, r.offset_msg_id, r.queue_offset, r.msg_id) for i, r in got] == [
        (0, "ID0", 40, "0" * 32),
        (1, "ID1", 41, "0" * 31 + "1"),
        (2, "ID2", 42, "0" * 31 + "2"),
    ]


def test_one_refusal_refuses_every_message_of_the_batch():
    _, plans = sending.requests(_prepared([("T", 0, b"a"), ("T", 0, b"b")]), "PG")
    answer = RemotingCommand(ResponseCode.SYSTEM_BUSY, remark="too many requests")
    got = list(sending.results(answer, plans[0]))
    assert [i for i, _ in got] == [0, 1]
    assert all(isinstance(r, BrokerBusy) and "too many requests" in str(r) for _, r in got)
