"""Stored-message decoding, against records built by the independent test encoder."""

from __future__ import annotations

import io
import zlib

import lz4.frame
import pytest
import zstandard

from consumers.rocketmq.errors import ProtocolError
from consumers.rocketmq.message import (
    create_offset_msg_id,
    decode_messages,
    decode_offset_msg_id,
    inflate,
    parse_properties,
    split_address,
)
from tests.support.wire import V2, encode_stored_message

PROPS = {"UNIQ_KEY": "7F0000011DF06E810F9B6CA9540F3963", "KEYS": "order-1 order-2", "TAGS": "TagA", "WAIT": "true"}


def test_it_round_trips_every_field_of_an_ipv4_message():
    record = encode_stored_message(
        topic="TopicTest",
        body=b'{"a":1}',
        properties=PROPS,
        queue_id=3,
        flag=7,
        queue_offset=120,
        physical_offset=987654321,
        born_timestamp=1_700_000_000_001,
        store_timestamp=1_700_000_000_002,
        reconsume_times=2,
        prepared_transaction_offset=5,
    )
    [message] = decode_messages(record)
    assert (message.topic, message.queue_id, message.flag, message.queue_offset) == ("TopicTest", 3, 7, 120)
    assert (message.physical_offset, message.reconsume_times, message.prepared_transaction_offset) == (987654321, 2, 5)
    assert (message.born_timestamp, message.store_timestamp) == (1_700_000_000_001, 1_700_000_000_002)
    assert (message.born_host, message.store_host) == ("10.0.0.5:54321", "127.0.0.1:10911")
    assert message.body == message.stored_body == b'{"a":1}'
    assert message.body_crc == zlib.crc32(b'{"a":1}') & 0x7FFFFFFF
    assert message.properties == PROPS
    assert message.msg_id == PROPS["UNIQ_KEY"]
    assert message.keys == ["order-1", "order-2"] and message.tags == "TagA"
    assert message.store_size == len(record)


@pytest.mark.parametrize(
    ("born", "store", "flags"),
    [
        (("fd00::5", 1234), ("127.0.0.1", 10911), 0x10),
        (("10.1.2.3", 1234), ("2001:db8::1", 10911), 0x20),
        (("fe80::1", 1), ("::1", 10911), 0x30),
    ],
)
def test_ipv6_hosts_shift_the_layout(born, store, flags):
    record = encode_stored_message(topic="T6", body=b"v6", born_host=born, store_host=store, reconsume_times=9)
    [message] = decode_messages(record)
    assert message.sys_flag & 0x30 == flags
    assert message.born_host == f"{born[0]}:{born[1]}" and message.store_host == f"{store[0]}:{store[1]}"
    assert (message.topic, message.body, message.reconsume_times) == ("T6", b"v6", 9)


def test_v2_magic_has_a_two_byte_topic_length():
    topic = "%RETRY%" + "g" * 200
    [message] = decode_messages(encode_stored_message(topic=topic, body=b"x", magic=V2))
    assert message.topic == topic


def _zstd(data: bytes) -> bytes:
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as writer:  # no content size, like zstd-jni
        writer.write(data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("sys_flag", "compress", "name"),
    [
        (0x1, lambda b: zlib.compress(b, 5), "ZLIB"),
        (0x1 | (3 << 8), lambda b: zlib.compress(b, 5), "ZLIB"),
        (0x1 | (1 << 8), lz4.frame.compress, "LZ4"),
        (0x1 | (2 << 8), _zstd, "ZSTD"),
    ],
)
def test_compressed_bodies_are_inflated_by_their_type(sys_flag, compress, name):
    body = ("large body " * 800).encode()
    [message] = decode_messages(encode_stored_message(topic="T", body=compress(body), sys_flag=sys_flag))
    assert message.compressed and message.compression == name
    assert message.body == body and len(message.stored_body) < len(body)


def test_a_pull_body_of_several_messages_decodes_in_order():
    records = b"".join(
        encode_stored_message(topic="T", body=f"m{i}".encode(), queue_offset=i, properties={"KEYS": f"k{i}"})
        for i in range(40)
    )
    messages = decode_messages(records)
    assert [m.queue_offset for m in messages] == list(range(40))
    assert [m.body for m in messages] == [f"m{i}".encode() for i in range(40)]


def test_a_truncated_record_raises_with_the_messages_before_it():
    good = encode_stored_message(topic="T", body=b"first")
    second = encode_stored_message(topic="T", body=b"second")
    with pytest.raises(ProtocolError) as caught:
        decode_messages(good + second[:-3])
    assert [m.body for m in caught.value.partial] == [b"first"]


def test_unknown_magic_and_lying_lengths_are_protocol_errors():
    record = bytearray(encode_stored_message(topic="T", body=b"abc"))
    record[4:8] = b"\xcb\xd4\x31\x94"  # the end-of-file blank marker
    with pytest.raises(ProtocolError, match="magic"):
        decode_messages(bytes(record))
    record = bytearray(encode_stored_message(topic="T", body=b"abc"))
    record[0:4] = (10**6).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="runs past"):
        decode_messages(bytes(record))


def test_decompression_is_bounded():
    bomb = zlib.compress(b"\0" * (2 * 1024 * 1024))
    with pytest.raises(ProtocolError, match="inflates past"):
        inflate(bomb, 0x1, max_body=1024 * 1024)
    with pytest.raises(ProtocolError, match="inflates past"):
        inflate(lz4.frame.compress(b"\0" * 100_000), 0x1 | (1 << 8), max_body=50_000)
    with pytest.raises(ProtocolError, match="inflates past"):
        inflate(_zstd(b"\0" * 100_000), 0x1 | (2 << 8), max_body=50_000)


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_truncated_compressed_bodies_are_errors_not_short_bodies(kind):
    body = bytes(range(256)) * 40
    compressed = {0: zlib.compress(body), 1: lz4.frame.compress(body), 2: _zstd(body)}[kind]
    with pytest.raises(ProtocolError):
        inflate(compressed[: len(compressed) // 2], 0x1 | (kind << 8))


def test_garbage_compressed_bodies_and_unknown_types():
    with pytest.raises(ProtocolError):
        inflate(b"not zlib at all", 0x1)
    with pytest.raises(ProtocolError, match="unknown compression type 5"):
        inflate(b"x", 0x1 | (5 << 8))


def test_properties_parsing_skips_segments_without_a_separator():
    assert parse_properties("a\x011\x02broken\x02\x02b\x01\x02c\x01x\x01y\x02") == {"a": "1", "b": "", "c": "x\x01y"}


def test_offset_message_ids_round_trip_for_ipv4_and_ipv6():
    msg_id = create_offset_msg_id("127.0.0.1", 10911, 0x1A2B)
    assert msg_id == "7F00000100002A9F0000000000001A2B"
    assert decode_offset_msg_id(msg_id) == ("127.0.0.1:10911", 0x1A2B)
    msg_id6 = create_offset_msg_id("fd00::2", 10911, 99)
    assert len(msg_id6) == 56 and decode_offset_msg_id(msg_id6) == ("fd00::2:10911", 99)
    with pytest.raises(ValueError):
        decode_offset_msg_id("not-an-id")


def test_addresses_split_on_the_last_colon():
    assert split_address("fd00::2:10911") == ("fd00::2", 10911)
    assert split_address("[::1]:9876") == ("::1", 9876)
    with pytest.raises(ProtocolError):
        split_address("nohost")


@pytest.mark.parametrize(
    ("dlq", "stored", "original"),
    [
        ("%DLQ%G-pay", "orders", "orders"),  # a classic consumer's, or a POP first delivery's
        ("%DLQ%G-pay", "%RETRY%G-pay_orders", "orders"),  # POP retry topic, v1
        ("%DLQ%G-pay", "%RETRY%G-pay+orders_eu", "orders_eu"),  # v2
        ("%DLQ%G_a", "%RETRY%G_a_b_c", "b_c"),  # underscores in both: the group decides
        ("%DLQ%G-pay", "%RETRY%G-other_orders", "%RETRY%G-other_orders"),  # another group's: left as stored
        ("%DLQ%G-pay", "%RETRY%G-pay", "%RETRY%G-pay"),  # the classic retry topic is no POP one
    ],
)
def test_a_pop_dead_letters_original_topic_is_read_back_from_its_groups_retry_topic(dlq, stored, original):
    record = encode_stored_message(topic=dlq, body=b"x", properties={"RETRY_TOPIC": stored}, queue_id=0)
    [message] = decode_messages(record)
    assert message.original_topic == original and message.stored_retry_topic == stored


@pytest.mark.parametrize(
    ("properties", "stored", "deliveries"),
    [
        ({}, 3, 3),  # classic: maxReconsumeTimes 2, three deliveries, send-back stores 2 + 1
        ({"1ST_POP_TIME": "1700000000000"}, 4, 3),  # POP, max attempts 3: revived a third time, then DLQ
        ({"1ST_POP_TIME": "1700000000000"}, 1, 1),  # never below one
    ],
)
def test_deliveries_of_a_dead_letter_classic_and_pop(properties, stored, deliveries):
    record = encode_stored_message(topic="%DLQ%G", body=b"x", properties=properties, reconsume_times=stored)
    [message] = decode_messages(record)
    assert message.deliveries == deliveries
