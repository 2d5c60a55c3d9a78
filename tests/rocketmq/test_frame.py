"""Frame codec: golden frames from the protocol reference, both header types, stream decoding."""

from __future__ import annotations

import struct

import pytest

from consumers.rocketmq.errors import ProtocolError
from consumers.rocketmq.frame import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERIALIZE_ROCKETMQ,
    FrameDecoder,
    RemotingCommand,
    decode,
    encode,
    encode_binary,
)
from tests.support.wire import binary_frame, json_frame

# rocketmq-protocol.md 1.2: GET_ROUTEINFO_BY_TOPIC for TopicTest, JSON header, written out by hand.
GOLDEN_JSON = bytes.fromhex("0000006800000064") + (
    b'{"code":105,"language":"PYTHON","version":401,"opaque":1,"flag":0,"extFields":{"topic":"TopicTest"}}'
)
# rocketmq-protocol.md 1.4: the same request with a ROCKETMQ binary header.
GOLDEN_BINARY = bytes.fromhex(
    "0000002d" "01000029"
    "0069" "03" "0191" "00000001" "00000000"
    "00000000"
    "00000014"
    "0005" "746f706963" "00000009" "546f70696354657374"
)  # fmt: skip


def test_it_encodes_a_request_byte_for_byte_like_the_reference():
    command = RemotingCommand(code=105, opaque=1, ext_fields={"topic": "TopicTest"})
    assert encode(command) == GOLDEN_JSON


def test_it_decodes_the_reference_json_frame():
    command = decode(GOLDEN_JSON[4:])
    assert (command.code, command.language, command.version, command.opaque, command.flag) == (105, "PYTHON", 401, 1, 0)
    assert command.ext_fields == {"topic": "TopicTest"}
    assert command.body == b""
    assert not command.is_response


def test_it_decodes_the_reference_binary_frame():
    command = decode(GOLDEN_BINARY[4:])
    assert command.serialize_type == SERIALIZE_ROCKETMQ
    assert (command.code, command.language, command.version, command.opaque, command.flag) == (105, "PYTHON", 401, 1, 0)
    assert command.remark is None
    assert command.ext_fields == {"topic": "TopicTest"}


def test_binary_encoding_matches_the_reference_frame():
    command = RemotingCommand(code=105, opaque=1, ext_fields={"topic": "TopicTest"})
    assert encode_binary(command) == GOLDEN_BINARY


def test_it_decodes_a_java_error_response_with_remark_and_unknown_keys():
    header = (
        b'{"code":17,"flag":1,"language":"JAVA","opaque":3,"remark":"No topic route info in name server for the '
        b'topic: TopicX","serializeTypeCurrentRPC":"JSON","version":479}'
    )
    command = decode(json_frame(header)[4:])
    assert command.is_response and command.code == 17 and command.version == 479
    assert command.remark.startswith("No topic route info")
    assert command.ext_fields == {}


def test_binary_response_with_remark_ext_fields_and_a_body():
    frame = binary_frame(
        code=0, language=0, version=479, opaque=-7, flag=FLAG_RESPONSE, remark="é ok".encode(), ext={"offset": "42"}
    )
    body = b"\x00\x01binary"
    command = decode(frame[4:] + body)  # decode() takes the frame after its length word
    assert (command.opaque, command.remark, command.ext_fields, command.body) == (-7, "é ok", {"offset": "42"}, body)
    assert command.language == "JAVA"


def test_unknown_languages_are_kept_not_rejected():
    assert decode(json_frame(b'{"code":0,"language":"COBOL","opaque":1,"flag":1}')[4:]).language == "COBOL"
    frame = binary_frame(code=0, language=200, version=1, opaque=1, flag=1)
    assert decode(frame[4:]).language == "UNKNOWN(200)"


def test_numbers_in_ext_fields_become_strings():
    command = decode(json_frame(b'{"code":0,"opaque":1,"flag":1,"extFields":{"offset":12,"ok":true,"x":null}}')[4:])
    assert command.ext_fields == {"offset": "12", "ok": "true"}


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"\x00\x00", "shorter than its header word"),
        (b"\x00\x00\x00\x10{}", "header length 16 exceeds"),
        (b"\x02\x00\x00\x02{}", "unknown header serialize type 2"),
        (b"\x00\x00\x00\x05{nope", "not valid JSON"),
        (b"\x00\x00\x00\x02[]", "not a JSON object"),
        (b'\x00\x00\x00\x10{"code":"abc"}  ', "not an integer"),
        (b'\x00\x00\x00\x19{"extFields":{"a":[1]}}  ', "not a scalar"),
        (b"\x01\x00\x00\x03\x00\x01\x02", "truncated binary header"),
    ],
)
def test_malformed_frames_raise_protocol_errors(frame, message):
    with pytest.raises(ProtocolError, match=message):
        decode(frame)


def test_binary_header_lengths_that_run_past_the_header_are_rejected():
    header = struct.pack(">hBhii", 0, 0, 1, 1, 1) + struct.pack(">i", 1000)  # remark of 1000 bytes, none there
    with pytest.raises(ProtocolError, match="runs past the header"):
        decode(struct.pack(">i", (1 << 24) | len(header)) + header)


def test_stream_decoder_reassembles_frames_fed_one_byte_at_a_time():
    frames = GOLDEN_JSON + GOLDEN_BINARY + encode(RemotingCommand(code=0, opaque=9, flag=1, body=b"x" * 1000))
    decoder = FrameDecoder()
    commands = []
    for i in range(len(frames)):
        commands += decoder.feed(frames[i : i + 1])
    assert [c.opaque for c in commands] == [1, 1, 9]
    assert commands[2].body == b"x" * 1000


def test_stream_decoder_refuses_a_declared_length_over_the_limit_before_buffering_it():
    decoder = FrameDecoder(max_frame=1024)
    with pytest.raises(ProtocolError, match="outside 4..1024"):
        decoder.feed(struct.pack(">i", 1025) + b"x" * 10)
    with pytest.raises(ProtocolError, match="outside"):
        FrameDecoder().feed(struct.pack(">i", -5))


def test_encoding_refuses_frames_over_the_limit():
    with pytest.raises(ProtocolError, match="exceeds"):
        encode(RemotingCommand(code=10, body=b"x" * 2000), max_frame=1024)


def test_oneway_and_response_flags():
    assert RemotingCommand(code=1, flag=FLAG_ONEWAY).is_oneway
    assert RemotingCommand(code=1, flag=FLAG_RESPONSE).is_response
