"""Property-based tests: whatever bytes arrive, only a typed ProtocolError comes out, quickly
and within bounded memory; valid inputs round-trip.

The number of examples per test is set by the Hypothesis profile (tests/conftest.py):
300 by default, 1000 with HYPOTHESIS_PROFILE=ci (what CI runs).
"""

from __future__ import annotations

import json
import tracemalloc

from hypothesis import HealthCheck, assume, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from consumers.rocketmq.errors import ProtocolError
from consumers.rocketmq.fastjson import KeyedPairs, loads
from consumers.rocketmq.frame import FrameDecoder, RemotingCommand, decode, encode, encode_binary
from consumers.rocketmq.message import decode_messages
from tests.support.wire import V1, V2, encode_stored_message

MEMORY_BOUND = 16 * 1024 * 1024  # peak allocation allowed for inputs of at most a few KiB


class bounded_memory:  # lower case: reads like a function in `with bounded_memory():`
    def __enter__(self):
        tracemalloc.start()

    def __exit__(self, *exc):
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < MEMORY_BOUND, f"peak allocation {peak} bytes"
        return False


def mutations(data: bytes):
    """Strategy: `data` with bytes flipped, cut, or inserted."""
    return st.one_of(
        st.builds(
            lambda pos, value: data[: pos % max(1, len(data))] + bytes([value]) + data[pos % max(1, len(data)) + 1 :],
            st.integers(0, 10_000),
            st.integers(0, 255),
        ),
        st.builds(lambda cut: data[: cut % max(1, len(data))], st.integers(0, 10_000)),
        st.builds(
            lambda pos, junk: data[: pos % max(1, len(data))] + junk + data[pos % max(1, len(data)) :],
            st.integers(0, 10_000),
            st.binary(max_size=16),
        ),
    )


# frames

ext_fields = st.dictionaries(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=40), max_size=5)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-32768, 32767),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    ext_fields=ext_fields,
    body=st.binary(max_size=256),
    remark=st.none() | st.text(min_size=1, max_size=40),
    version=st.integers(0, 32767),
)


@given(st.binary(max_size=4096), st.integers(1, 64))
def test_random_bytes_on_the_socket_give_only_protocol_errors(data, chunk):
    decoder = FrameDecoder(max_frame=1024 * 1024)
    with bounded_memory():
        try:
            for i in range(0, len(data), chunk):
                decoder.feed(data[i : i + chunk])
        except ProtocolError:
            pass


@given(commands)
def test_json_frames_round_trip(command):
    [decoded] = FrameDecoder().feed(encode(command))
    assert (decoded.code, decoded.opaque, decoded.flag, decoded.body) == (
        command.code,
        command.opaque,
        command.flag,
        command.body,
    )
    assert decoded.ext_fields == command.ext_fields and decoded.remark == command.remark


@given(commands)
def test_binary_frames_round_trip(command):
    [decoded] = FrameDecoder().feed(encode_binary(command))
    assert decoded.ext_fields == command.ext_fields and decoded.remark == command.remark
    assert (decoded.code, decoded.opaque, decoded.version) == (command.code, command.opaque, command.version)


@given(st.data())
def test_mutated_frames_give_a_command_or_a_protocol_error(data):
    command = data.draw(commands)
    raw = data.draw(st.sampled_from([encode(command), encode_binary(command)]))
    mutated = data.draw(mutations(raw))
    with bounded_memory():
        try:
            decode(mutated[4:])
        except ProtocolError:
            pass


# bodies

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_standard_json_bodies_parse_like_json_loads(value):
    text = json.dumps(value)
    assert loads(text.encode()) == json.loads(text)


message_queues = st.fixed_dictionaries(
    {"brokerName": st.text(max_size=20), "queueId": st.integers(0, 1000), "topic": st.text(max_size=30)}
)
offset_wrappers = st.fixed_dictionaries(
    {"brokerOffset": st.integers(0, 2**62), "consumerOffset": st.integers(0, 2**62), "lastTimestamp": st.integers(0)}
)


@given(st.lists(st.tuples(message_queues, offset_wrappers | st.integers()), max_size=20), st.booleans())
def test_fastjson_object_keyed_maps_parse_back_to_their_entries(entries, ascii_only):
    # what fastjson writes for Map<MessageQueue, ...>: raw object keys
    table = ",".join(
        json.dumps(k, ensure_ascii=ascii_only) + ":" + json.dumps(v, ensure_ascii=ascii_only) for k, v in entries
    )
    body = '{"consumeTps":1.5,"offsetTable":{' + table + "}}"
    parsed = loads(body.encode("utf-8"))
    if entries:
        assert isinstance(parsed["offsetTable"], KeyedPairs)
    assert list(parsed["offsetTable"]) == [(k, v) for k, v in entries]


@given(st.dictionaries(st.integers(-(2**40), 2**40), st.text(max_size=20), max_size=8))
def test_bare_numeric_keys_parse_as_ints(mapping):
    body = "{" + ",".join(f"{k}:{json.dumps(v)}" for k, v in mapping.items()) + "}"
    assert loads(body) == mapping


def fastjson_text(value) -> str:
    """`value` as fastjson writes it: no whitespace, numeric map keys bare."""
    if isinstance(value, dict):
        entries = ((json.dumps(k) if isinstance(k, str) else str(k)) + ":" + fastjson_text(v) for k, v in value.items())
        return "{" + ",".join(entries) + "}"
    if isinstance(value, list):
        return "[" + ",".join(fastjson_text(v) for v in value) + "]"
    return json.dumps(value)


def _keys(value) -> list:
    if isinstance(value, dict):
        return [k for key, v in value.items() for k in (key, *_keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def _unambiguous(value) -> bool:
    """No map with both 5 and "5" as keys: written out, they are one key twice."""
    if isinstance(value, dict):
        return len({str(k) for k in value}) == len(value) and all(_unambiguous(v) for v in value.values())
    if isinstance(value, list):
        return all(_unambiguous(v) for v in value)
    return True


keyed_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.integers(-(2**40), 2**40), children, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(-9, 99), children, max_size=4)
    ),
    max_leaves=30,
)


@given(keyed_values)
def test_bodies_with_numeric_keys_anywhere_parse_to_their_value(value):
    # quoted at once where the body allows it (no backslash, no string starting with a space),
    # else walked: the same value either way, and with numeric_keys off what json.loads reads
    # from the same data written as standard JSON
    assume(_unambiguous(value))
    text = fastjson_text(value)
    parsed = loads(text.encode())
    assert parsed == value and [type(k) for k in _keys(parsed)] == [type(k) for k in _keys(value)]
    assert loads(text, numeric_keys=False) == json.loads(json.dumps(value))


@given(st.binary(max_size=2048))
@hsettings(suppress_health_check=[HealthCheck.too_slow])
def test_random_bodies_give_a_value_or_a_protocol_error(data):
    with bounded_memory():
        try:
            loads(data)
        except ProtocolError:
            pass


@given(st.data())
def test_mutated_fastjson_bodies_give_a_value_or_a_protocol_error(data):
    entries = data.draw(st.lists(st.tuples(message_queues, offset_wrappers), min_size=1, max_size=5))
    body = ("{" + ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in entries) + "}").encode()
    try:
        loads(data.draw(mutations(body)))
    except ProtocolError:
        pass


# messages

hosts = st.sampled_from([("127.0.0.1", 10911), ("10.1.2.3", 1), ("fd00::2", 10911), ("::1", 65535)])
properties = st.dictionaries(
    st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=10),
    st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=20),
    max_size=5,
)


@st.composite
def stored_messages(draw):
    fields = {
        "topic": draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)),
        "body": draw(st.binary(max_size=300)),
        "properties": draw(properties),
        "queue_id": draw(st.integers(0, 2**31 - 1)),
        "queue_offset": draw(st.integers(0, 2**62)),
        "physical_offset": draw(st.integers(0, 2**62)),
        "born_host": draw(hosts),
        "store_host": draw(hosts),
        "reconsume_times": draw(st.integers(0, 100)),
        "store_timestamp": draw(st.integers(0, 2**45)),
    }
    fields["magic"] = V2 if len(fields["topic"].encode()) > 127 or draw(st.booleans()) else V1
    assume(len(fields["topic"].encode()) < 256)
    return fields


@given(st.lists(stored_messages(), min_size=1, max_size=5))
def test_stored_messages_round_trip(fields_list):
    body = b"".join(encode_stored_message(**fields) for fields in fields_list)
    decoded = decode_messages(body)
    assert len(decoded) == len(fields_list)
    for message, fields in zip(decoded, fields_list, strict=True):
        assert message.topic == fields["topic"] and message.body == fields["body"]
        assert message.properties == {k: v for k, v in fields["properties"].items()}
        assert (message.queue_id, message.queue_offset, message.reconsume_times) == (
            fields["queue_id"],
            fields["queue_offset"],
            fields["reconsume_times"],
        )
        assert message.store_host.rsplit(":", 1)[0] == fields["store_host"][0]


@given(st.data())
def test_mutated_messages_give_messages_or_a_protocol_error(data):
    fields = data.draw(stored_messages())
    record = encode_stored_message(**fields)
    with bounded_memory():
        try:
            decode_messages(data.draw(mutations(record)))
        except ProtocolError:
            pass


@given(st.binary(max_size=4096))
def test_random_message_bytes_give_only_protocol_errors(data):
    with bounded_memory():
        try:
            decode_messages(data)
        except ProtocolError:
            pass
