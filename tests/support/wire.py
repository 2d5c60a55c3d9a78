"""Test-side encoders for the wire formats, written from the layout in
docs/rocketmq-protocol.md (section 5.1) and independent of consumers/rocketmq/message.py."""

from __future__ import annotations

import ipaddress
import struct
import zlib

V1 = 0xDAA320A7
V2 = 0xDAA320AB


def encode_stored_message(
    *,
    topic: str,
    body: bytes,
    properties: dict[str, str] | None = None,
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 1_700_000_000_000,
    born_host: tuple[str, int] = ("10.0.0.5", 54321),
    store_timestamp: int = 1_700_000_000_123,
    store_host: tuple[str, int] = ("127.0.0.1", 10911),
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    magic: int = V1,
) -> bytes:
    def host(address: tuple[str, int]) -> bytes:
        return ipaddress.ip_address(address[0]).packed + struct.pack(">i", address[1])

    if ipaddress.ip_address(born_host[0]).version == 6:
        sys_flag |= 0x10
    if ipaddress.ip_address(store_host[0]).version == 6:
        sys_flag |= 0x20
    topic_bytes = topic.encode()
    props = "".join(f"{k}\x01{v}\x02" for k, v in (properties or {}).items()).encode()
    topic_length = struct.pack(">B" if magic == V1 else ">H", len(topic_bytes))
    record = b"".join(
        [
            struct.pack(">I", magic),
            struct.pack(">i", zlib.crc32(body) & 0x7FFFFFFF),
            struct.pack(">iiqqiq", queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp),
            host(born_host),
            struct.pack(">q", store_timestamp),
            host(store_host),
            struct.pack(">iq", reconsume_times, prepared_transaction_offset),
            struct.pack(">i", len(body)),
            body,
            topic_length,
            topic_bytes,
            struct.pack(">H", len(props)),
            props,
        ]
    )
    return struct.pack(">i", 4 + len(record)) + record


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


def binary_frame(
    *, code: int, language: int, version: int, opaque: int, flag: int, remark: bytes = b"", ext: dict | None = None
) -> bytes:
    ext_bytes = b""
    for key, value in (ext or {}).items():
        kb, vb = key.encode(), value.encode()
        ext_bytes += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    header = (
        struct.pack(">hBhii", code, language, version, opaque, flag)
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(ext_bytes))
        + ext_bytes
    )
    return struct.pack(">ii", 4 + len(header), (1 << 24) | len(header)) + header
