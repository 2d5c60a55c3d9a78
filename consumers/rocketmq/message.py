"""Stored messages: the commit-log record layout returned by PULL, QUERY and VIEW.

Layout (big-endian): totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset,
sysFlag, bornTimestamp, bornHost (8 bytes, or 20 for IPv6), storeTimestamp, storeHost
(8 or 20), reconsumeTimes, preparedTransactionOffset, body (int32 length), topic (1-byte
length in V1, 2 bytes in V2), properties (unsigned int16 length).
"""

from __future__ import annotations

import io
import ipaddress
import struct
import zlib
from dataclasses import dataclass, field

import lz4.frame
import zstandard

from .codes import DLQ_PREFIX, pop_retry_source
from .errors import ProtocolError

MAGIC_V1 = -626843481  # 0xDAA320A7: topic length is one byte
MAGIC_V2 = -626843477  # 0xDAA320AB: topic length is two bytes (5.x, long topics)

FLAG_COMPRESSED = 0x1
FLAG_MULTI_TAGS = 0x2
FLAG_BORNHOST_V6 = 0x10
FLAG_STOREHOST_V6 = 0x20
FLAG_NEED_UNWRAP = 0x40
FLAG_INNER_BATCH = 0x80
COMPRESSION_MASK = 0x700

COMPRESSION_NAMES = {0: "ZLIB", 1: "LZ4", 2: "ZSTD", 3: "ZLIB"}

# A compressed body may not inflate past this (Java caps message bodies at 4 MiB by default).
MAX_INFLATED_BODY = 64 * 1024 * 1024

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

_HEAD = struct.Struct(">iiiiiqqiq")  # totalSize .. bornTimestamp (48 bytes)
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_HOST4 = struct.Struct(">BBBBi")


@dataclass(slots=True)
class Message:
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body_crc: int
    stored_body: bytes
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    store_size: int = 0

    @property
    def compressed(self) -> bool:
        return bool(self.sys_flag & FLAG_COMPRESSED)

    @property
    def compression(self) -> str | None:
        if not self.compressed:
            return None
        kind = (self.sys_flag & COMPRESSION_MASK) >> 8
        return COMPRESSION_NAMES.get(kind, f"type {kind}")

    @property
    def offset_msg_id(self) -> str:
        host, port = split_address(self.store_host)
        return create_offset_msg_id(host, port, self.physical_offset)

    @property
    def msg_id(self) -> str:
        """The id users see: the client's UNIQ_KEY when there is one, else the offset id."""
        return self.properties.get("UNIQ_KEY") or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def keys(self) -> list[str]:
        return [k for k in self.properties.get("KEYS", "").split(" ") if k]

    @property
    def original_topic(self) -> str:
        """For retried and dead messages, the topic the message was first sent to. A POP
        consumer's dead letter (RocketMQ 5 gRPC clients) stores its group's POP retry topic
        (%RETRY%{group}_{topic}) there when it failed on a redelivery: the topic is read back
        from it, with the group taken from the DLQ the message lies in."""
        stored = self.properties.get("RETRY_TOPIC") or self.topic
        if self.topic.startswith(DLQ_PREFIX):
            return pop_retry_source(stored, self.topic[len(DLQ_PREFIX) :]) or stored
        return stored

    @property
    def deliveries(self) -> int:
        """How many times consumers got a dead letter before it went to the DLQ. A classic
        consumer's send-back stores one more than the retries it had (its deliveries); a POP
        message (RocketMQ 5 clients) is revived once more after its last delivery and carries
        1ST_POP_TIME from its first revive, so it stores one more than its deliveries."""
        if "1ST_POP_TIME" in self.properties:
            return max(1, self.reconsume_times - 1)
        return self.reconsume_times

    @property
    def stored_retry_topic(self) -> str | None:
        """The RETRY_TOPIC property as the broker stored it (a POP retry topic, for POP groups)."""
        return self.properties.get("RETRY_TOPIC")


def decode_messages(data: bytes, *, max_body: int = MAX_INFLATED_BODY) -> list[Message]:
    """Decode concatenated records. Malformed data raises ProtocolError carrying the
    messages decoded before the bad record in `partial`."""
    messages: list[Message] = []
    pos = 0
    view = memoryview(data)
    while pos < len(data):
        try:
            message = decode_message(view, pos, max_body=max_body)
        except ProtocolError as exc:
            exc.partial = messages
            raise
        messages.append(message)
        pos += message.store_size
    return messages


def decode_message(data: bytes | memoryview, pos: int = 0, *, max_body: int = MAX_INFLATED_BODY) -> Message:
    try:
        return _decode(data, pos, max_body)
    except struct.error as exc:
        raise ProtocolError(f"truncated message at byte {pos}: {exc}") from None


def _decode(data: bytes | memoryview, start: int, max_body: int) -> Message:
    total, magic, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_ts = _HEAD.unpack_from(data, start)
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise ProtocolError(f"unknown message magic code {magic & 0xFFFFFFFF:#x} at byte {start}")
    end = start + total
    if total < _HEAD.size or end > len(data):
        raise ProtocolError(f"message size {total} at byte {start} runs past the {len(data)}-byte body")
    record = data[:end]  # every read below is bounded by this record
    pos = start + _HEAD.size
    born_host, pos = _read_host(record, pos, sys_flag & FLAG_BORNHOST_V6)
    store_ts = _I64.unpack_from(record, pos)[0]
    store_host, pos = _read_host(record, pos + 8, sys_flag & FLAG_STOREHOST_V6)
    reconsume_times = _I32.unpack_from(record, pos)[0]
    prepared_offset = _I64.unpack_from(record, pos + 4)[0]
    body_length = _I32.unpack_from(record, pos + 12)[0]
    stored_body, pos = _read_bytes(record, pos + 16, body_length)
    if magic == MAGIC_V1:
        topic_length = record[pos]
        pos += 1
    else:
        topic_length = _U16.unpack_from(record, pos)[0]
        pos += 2
    topic, pos = _read_bytes(record, pos, topic_length)
    properties_length = _U16.unpack_from(record, pos)[0]
    raw_properties, pos = _read_bytes(record, pos + 2, properties_length)
    body = inflate(stored_body, sys_flag, max_body) if sys_flag & FLAG_COMPRESSED else stored_body
    return Message(
        topic=topic.decode("utf-8", "replace"),
        queue_id=queue_id,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=sys_flag,
        flag=flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_timestamp=store_ts,
        store_host=store_host,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_offset,
        body_crc=crc,
        stored_body=stored_body,
        body=body,
        properties=parse_properties(raw_properties.decode("utf-8", "replace")),
        store_size=total,
    )


def _read_host(data, pos: int, ipv6: int) -> tuple[str, int]:
    if not ipv6:  # one unpack, written out: ipaddress costs more than the rest of a message
        a, b, c, d, port = _HOST4.unpack_from(data, pos)
        return f"{a}.{b}.{c}.{d}:{port}", pos + 8
    raw, pos = _read_bytes(data, pos, 16)
    port = _I32.unpack_from(data, pos)[0]
    return f"{ipaddress.ip_address(raw)}:{port}", pos + 4


def _read_bytes(data, pos: int, length: int) -> tuple[bytes, int]:
    end = pos + length
    if length < 0 or end > len(data):
        raise ProtocolError(f"field of {length} bytes at byte {pos} runs past the message")
    return bytes(data[pos:end]), end


_CHUNK = 64 * 1024


def inflate(stored: bytes, sys_flag: int, max_body: int = MAX_INFLATED_BODY) -> bytes:
    """Decompress a body by the compression type in bits 8-10 of sysFlag, never past max_body.

    Memory grows with the real output, in 64 KiB steps: the LZ4 and zstd decompressors
    would otherwise allocate the whole limit up front, even for a few bytes of garbage."""
    kind = (sys_flag & COMPRESSION_MASK) >> 8
    name = COMPRESSION_NAMES.get(kind, f"type {kind}")
    try:
        if kind in (0, 3):
            inflater = zlib.decompressobj()
            body = inflater.decompress(stored, max_body + 1)
            complete = inflater.eof
        elif kind == 1:
            body, complete = _lz4(stored, max_body)
        elif kind == 2:
            body, complete = _zstd(stored, max_body)
        else:
            raise ProtocolError(f"unknown compression type {kind} in sysFlag {sys_flag:#x}")
    except (zlib.error, RuntimeError, zstandard.ZstdError) as exc:
        raise ProtocolError(f"cannot decompress {name} body: {exc}") from None
    if len(body) > max_body:
        raise ProtocolError(f"{name} body inflates past {max_body} bytes")
    if not complete:
        raise ProtocolError(f"{name} body is truncated")
    return body


def _lz4(stored: bytes, max_body: int) -> tuple[bytes, bool]:
    inflater = lz4.frame.LZ4FrameDecompressor()
    body = bytearray(inflater.decompress(stored, max_length=_CHUNK))
    while not inflater.eof and not inflater.needs_input:
        body += inflater.decompress(b"", max_length=_CHUNK)
        if len(body) > max_body:
            raise ProtocolError(f"LZ4 body inflates past {max_body} bytes")
    return bytes(body), inflater.eof


def _zstd(stored: bytes, max_body: int) -> tuple[bytes, bool]:
    # The stream reader bounds the output but cannot tell a truncated frame; once the size
    # is known to be bounded, decompressobj reads it again and tells whether it ended.
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(stored))
    size = 0
    while chunk := reader.read(_CHUNK):
        size += len(chunk)
        if size > max_body:
            raise ProtocolError(f"ZSTD body inflates past {max_body} bytes")
    inflater = zstandard.ZstdDecompressor().decompressobj()
    return inflater.decompress(stored), inflater.eof


def parse_properties(text: str) -> dict[str, str]:
    """`name\\x01value\\x02...`; segments without a separator are skipped, as Java does."""
    result = {}
    for segment in text.split(PROPERTY_SEPARATOR):
        name, sep, value = segment.partition(NAME_VALUE_SEPARATOR)
        if sep and name:
            result[name] = value
    return result


def format_properties(properties: dict[str, str]) -> str:
    if not properties:
        return ""
    try:  # joins of joins: no Python-level step per property (every send formats a dozen)
        return PROPERTY_SEPARATOR.join(map(NAME_VALUE_SEPARATOR.join, properties.items())) + PROPERTY_SEPARATOR
    except TypeError:  # a value that is not a string yet
        return "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items())


def split_address(address: str) -> tuple[str, int]:
    """`ip:port`, where IPv6 addresses come without brackets: split on the last colon."""
    host, sep, port = address.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()):  # "²".isdigit() is true too
        raise ProtocolError(f"malformed address {address!r}")
    return host.strip("[]"), int(port)


def create_offset_msg_id(host: str, port: int, physical_offset: int) -> str:
    packed = ipaddress.ip_address(host).packed
    return (packed + _I32.pack(port) + _I64.pack(physical_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """Offset message id -> (broker address, commit-log offset). Raises ValueError for
    strings that are not of that shape (they may be UNIQ_KEYs instead)."""
    if len(msg_id) not in (32, 56):
        raise ValueError(f"{msg_id!r} is not an offset message id (32 or 56 hex characters)")
    raw = bytes.fromhex(msg_id)
    width = 4 if len(raw) == 16 else 16
    host = ipaddress.ip_address(raw[:width])
    port = _I32.unpack_from(raw, width)[0]
    offset = _I64.unpack_from(raw, width + 4)[0]
    return f"{host}:{port}", offset
