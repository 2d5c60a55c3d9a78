"""Frame codec of the remoting protocol.

A frame is `int32 length | int32 (serializeType << 24 | headerLength) | header | body`,
big-endian, where length counts everything after itself. We always send JSON headers and
accept both JSON and the binary "ROCKETMQ" header in what comes back: 5.x servers answer in
their own configured type, not in ours.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from .codes import DEFAULT_VERSION, language_byte, language_name
from .errors import ProtocolError

MAX_FRAME = 16 * 1024 * 1024  # the servers' own limit (com.rocketmq.remoting.frameMaxLength)
SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">II")
_BINARY_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_INT16 = struct.Struct(">h")


@dataclass(slots=True)
class RemotingCommand:
    code: int
    opaque: int = 0
    flag: int = 0
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    remark: str | None = None
    language: str = "PYTHON"
    version: int = DEFAULT_VERSION
    serialize_type: int = SERIALIZE_JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)


_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def encode(cmd: RemotingCommand, *, max_frame: int = MAX_FRAME) -> bytes:
    """Encode a command as one frame with a JSON header."""
    # Written out rather than json.dumps of a dict: this runs for every request, and only
    # the remark and the ext fields need escaping (the rest are ints and our own names).
    header = (
        f'{{"code":{int(cmd.code)},"language":"{cmd.language}","version":{int(cmd.version)},'
        f'"opaque":{int(cmd.opaque)},"flag":{int(cmd.flag)}'
    )
    if cmd.remark is not None:
        header += ',"remark":' + _json(cmd.remark)
    if cmd.ext_fields:
        header += ',"extFields":' + _json(cmd.ext_fields)
    header_bytes = (header + "}").encode()
    body = cmd.body or b""
    length = 4 + len(header_bytes) + len(body)
    if len(header_bytes) > 0xFFFFFF or length > max_frame:
        raise ProtocolError(f"frame of {length} bytes exceeds the {max_frame}-byte limit")
    return _PREFIX.pack(length, len(header_bytes)) + header_bytes + body


def encode_binary(cmd: RemotingCommand) -> bytes:
    """Encode with the ROCKETMQ binary header. Only used to build test frames and replies
    to peers that insist on it; our own requests always use JSON."""
    remark = cmd.remark.encode() if cmd.remark else b""
    ext = bytearray()
    for key, value in cmd.ext_fields.items():
        if key is None or value is None:
            continue
        kb, vb = key.encode(), str(value).encode()
        ext += _INT16.pack(len(kb)) + kb + _INT32.pack(len(vb)) + vb
    header = (
        _BINARY_FIXED.pack(cmd.code, language_byte(cmd.language), cmd.version, cmd.opaque, cmd.flag)
        + _INT32.pack(len(remark))
        + remark
        + _INT32.pack(len(ext))
        + bytes(ext)
    )
    body = cmd.body or b""
    return _PREFIX.pack(4 + len(header) + len(body), (SERIALIZE_ROCKETMQ << 24) | len(header)) + header + body


def decode(frame: bytes) -> RemotingCommand:
    """Decode one frame given without its leading length word."""
    if len(frame) < 4:
        raise ProtocolError(f"frame of {len(frame)} bytes is shorter than its header word")
    word = _INT32.unpack_from(frame)[0] & 0xFFFFFFFF
    serialize_type, header_length = word >> 24, word & 0xFFFFFF
    if header_length > len(frame) - 4:
        raise ProtocolError(f"header length {header_length} exceeds the {len(frame) - 4} bytes left in the frame")
    header = frame[4 : 4 + header_length]
    if serialize_type == SERIALIZE_JSON:
        cmd = _decode_json_header(header)
    elif serialize_type == SERIALIZE_ROCKETMQ:
        cmd = _decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown header serialize type {serialize_type}")
    cmd.body = frame[4 + header_length :]
    return cmd


_json_decode = json.JSONDecoder().decode


def _decode_json_header(raw: bytes) -> RemotingCommand:
    try:
        data = _json_decode(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError too
        raise ProtocolError(f"header is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("header is not a JSON object")
    ext = data.get("extFields") or {}
    remark = data.get("remark")
    if not isinstance(ext, dict) or not (remark is None or isinstance(remark, str)):
        raise ProtocolError("header has malformed extFields or remark")
    if ext and set(map(type, ext.values())) != _ONLY_STR:  # fastjson sends strings; others may not
        ext = {str(k): _ext_value(v) for k, v in ext.items() if v is not None}
    get = data.get
    code, opaque, flag, version = get("code", 0), get("opaque", 0), get("flag", 0), get("version", 0)
    if not (type(code) is int and type(opaque) is int and type(flag) is int and type(version) is int):
        # (checked in one go first: this runs for every answer)
        code, opaque = _int_field(data, "code", 0), _int_field(data, "opaque", 0)
        flag, version = _int_field(data, "flag", 0), _int_field(data, "version", 0)
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        version=version,
        language=language_name(data.get("language")),
        remark=remark,
        ext_fields=ext,
        serialize_type=SERIALIZE_JSON,
    )


_ONLY_STR = {str}


def _int_field(data: dict, key: str, default: int) -> int:
    value = data.get(key, default)
    if type(value) is int:
        return value
    if value is None:
        return default
    raise ProtocolError(f"header field {key!r} is not an integer: {value!r}")


def _ext_value(value: object) -> str:
    # fastjson writes ext fields as strings; tolerate numbers and booleans from other peers.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise ProtocolError(f"extFields value is not a scalar: {value!r}")


def _decode_binary_header(raw: bytes) -> RemotingCommand:
    try:
        code, language, version, opaque, flag = _BINARY_FIXED.unpack_from(raw)
        pos = _BINARY_FIXED.size
        remark_length = _INT32.unpack_from(raw, pos)[0]
        pos += 4
        remark = _take(raw, pos, remark_length).decode("utf-8", "replace") if remark_length else None
        pos += remark_length
        ext_length = _INT32.unpack_from(raw, pos)[0]
        pos += 4
        ext_end = pos + ext_length
        if ext_length < 0 or ext_end > len(raw):
            raise ProtocolError(f"extFields length {ext_length} runs past the header")
        ext: dict[str, str] = {}
        while pos < ext_end:
            key_length = _INT16.unpack_from(raw, pos)[0]
            key = _take(raw, pos + 2, key_length, ext_end)
            pos += 2 + key_length
            value_length = _INT32.unpack_from(raw, pos)[0]
            value = _take(raw, pos + 4, value_length, ext_end)
            pos += 4 + value_length
            ext[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    except struct.error as exc:
        raise ProtocolError(f"truncated binary header: {exc}") from None
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        version=version,
        language=language_name(language),
        remark=remark,
        ext_fields=ext,
        serialize_type=SERIALIZE_ROCKETMQ,
    )


def _take(raw: bytes, start: int, length: int, limit: int | None = None) -> bytes:
    end = start + length
    if length < 0 or end > (len(raw) if limit is None else limit):
        raise ProtocolError(f"field length {length} at byte {start} runs past the header")
    return raw[start:end]


class FrameDecoder:
    """Incremental decoder: feed socket bytes, get whole commands back.

    Memory is bounded by one frame (the declared length is checked against `max_frame`
    before anything is buffered for it) plus the chunk being fed.
    """

    def __init__(self, max_frame: int = MAX_FRAME):
        self.max_frame = max_frame
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[RemotingCommand]:
        buffer = self._buffer
        buffer += data
        commands = []
        start = 0
        while len(buffer) - start >= 4:
            length = int.from_bytes(buffer[start : start + 4], "big", signed=True)
            if length < 4 or length > self.max_frame:
                raise ProtocolError(f"frame length {length} is outside 4..{self.max_frame}")
            end = start + 4 + length
            if end > len(buffer):
                break
            commands.append(decode(bytes(buffer[start + 4 : end])))
            start = end
        if start:
            del buffer[:start]
        return commands
