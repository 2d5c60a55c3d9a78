"""Parser for the bodies Java brokers write with fastjson.

fastjson writes maps with non-string keys without quoting them: bare numbers
(`{0:"127.0.0.1:10911"}`) and whole objects (`{{"brokerName":"b","queueId":0,"topic":"t"}:5}`).
Neither is JSON. We try `json.loads` first; when it refuses, a small structural parser walks
the containers and hands every sub-value back to json's C scanner, so the Python-level work
is one step per map entry, not per character. Strings are only ever read by json's own
scanner, so braces, quotes or colons inside them cannot confuse the walk.

Result shapes:
- objects whose keys are all scalars become dicts (numeric keys as int or float);
- objects with an object or array key become `KeyedPairs`, a list of (key, value) tuples,
  because dicts are not hashable.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring
from json.scanner import make_scanner

from .errors import ProtocolError

MAX_DEPTH = 256

_scan_once = make_scanner(json.JSONDecoder())
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_SPACE = frozenset(" \t\n\r")


class KeyedPairs(list):
    """A map whose keys are objects, kept as (key, value) pairs in wire order."""


def pairs(value: object) -> list[tuple[object, object]]:
    """(key, value) pairs of a map whether it came back as a dict or as KeyedPairs."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, KeyedPairs):
        return list(value)
    if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        return [(k, v) for k, v in value]  # the "array of pairs" form some non-Java peers send
    raise ProtocolError(f"expected a map, got {type(value).__name__}")


def loads(data: bytes | str) -> object:
    """Parse a fastjson (or plain JSON) body; any malformed input raises ProtocolError."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"body is not UTF-8: {exc}") from None
    else:
        text = data
    try:
        return json.loads(text)
    except RecursionError:
        raise ProtocolError(f"body nests deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        pass
    parser = _Parser(text)
    start = _skip(text, 0)
    # json.loads just refused the whole body: walk its outer container rather than ask the
    # C scanner the same question again
    char = text[start : start + 1]
    if char == "{":
        value, end = parser.object(start, 0)
    elif char == "[":
        value, end = parser.array(start, 0)
    else:
        value, end = parser.value(start, 0)
    end = _skip(text, end)
    if end != len(text):
        raise ProtocolError(f"unexpected data after the body at character {end}")
    return value


def _skip(text: str, pos: int) -> int:
    # fastjson writes no whitespace: look at one character before running the regex
    if pos < len(text) and text[pos] in _SPACE:
        return _WHITESPACE.match(text, pos).end()
    return pos


def _object_keyed_map(text: str, pos: int) -> tuple[KeyedPairs, int] | None:
    """`{K:V,K:V}` where json can read every K and V and nothing stands between them: what
    fastjson writes for Map<MessageQueue, ...>. None when the map is anything else (then the
    general walk reads it from the start)."""
    scan = _scan_once
    entries = []
    try:
        while True:
            key, pos = scan(text, pos)
            if text[pos] != ":":
                return None
            value, pos = scan(text, pos + 1)
            entries.append((key, value))
            char = text[pos]
            if char == "}":
                return KeyedPairs(entries), pos + 1
            if char != "," or text[pos + 1] != "{":
                return None
            pos += 1
    except (ValueError, StopIteration, IndexError, RecursionError):
        return None


def _json_cannot_open(text: str, pos: int) -> bool:
    """An object whose first key is not a string (fastjson's `{0:5}` or `{{...}:...}`): json's
    scanner would refuse it, and its refusal (JSONDecodeError) counts the lines from the start
    of the body to say where, which over a large body, once per such object, is quadratic."""
    if not text.startswith("{", pos):
        return False
    first = _skip(text, pos + 1)
    return not (text.startswith('"', first) or text.startswith("}", first))


class _Parser:
    def __init__(self, text: str):
        self.text = text

    def value(self, pos: int, depth: int) -> tuple[object, int]:
        if depth > MAX_DEPTH:
            raise ProtocolError(f"body nests deeper than {MAX_DEPTH} levels")
        text = self.text
        if not _json_cannot_open(text, pos):
            try:
                return _scan_once(text, pos)
            except StopIteration:
                raise ProtocolError(f"expected a value at character {pos}") from None
            except RecursionError:
                raise ProtocolError(f"body nests deeper than {MAX_DEPTH} levels") from None
            except ValueError:
                pass  # a container json cannot read: walk it ourselves
        char = text[pos] if pos < len(text) else ""
        if char == "{":
            return self.object(pos, depth)
        if char == "[":
            return self.array(pos, depth)
        raise ProtocolError(f"malformed value at character {pos}")

    def key(self, pos: int, depth: int) -> tuple[object, int]:
        text = self.text
        char = text[pos] if pos < len(text) else ""
        if char == '"':
            try:
                return scanstring(text, pos + 1)
            except ValueError as exc:
                raise ProtocolError(f"malformed string key at character {pos}: {exc}") from None
        if char in "{[":
            return self.value(pos, depth + 1)
        match = _NUMBER.match(text, pos)
        if match:
            number = match.group()
            is_float = match.group(1) or match.group(2)
            return (float(number) if is_float else int(number)), match.end()
        for word, literal in _LITERALS.items():
            if text.startswith(word, pos):
                return literal, pos + len(word)
        raise ProtocolError(f"malformed object key at character {pos}")

    def object(self, pos: int, depth: int) -> tuple[object, int]:
        # The hot path of every object-keyed body: keep the common case (object or string
        # keys, values json can read) inline, with no helper call per character.
        text, scan, size = self.text, _scan_once, len(self.text)
        entries: list[tuple[object, object]] = []
        scalar_keys = True
        pos = _skip(text, pos + 1)
        if text.startswith("}", pos):
            return {}, pos + 1
        if text.startswith("{", pos):
            fast = _object_keyed_map(text, pos)
            if fast is not None:
                return fast
        while True:
            char = text[pos] if pos < size else ""
            if char == '"':
                try:
                    key, pos = scanstring(text, pos + 1)
                except ValueError as exc:
                    raise ProtocolError(f"malformed string key at character {pos}: {exc}") from None
            elif char in ("{", "["):
                key, pos = self._nested(scan, pos, depth)
                scalar_keys = False
            else:
                key, pos = self.key(pos, depth)
            if pos < size and text[pos] in _SPACE:
                pos = _skip(text, pos)
            if text[pos : pos + 1] != ":":
                raise ProtocolError(f"expected ':' at character {pos}")
            pos += 1
            if pos < size and text[pos] in _SPACE:
                pos = _skip(text, pos)
            value, pos = self._nested(scan, pos, depth)
            entries.append((key, value))
            if pos < size and text[pos] in _SPACE:
                pos = _skip(text, pos)
            char = text[pos : pos + 1]
            pos += 1
            if pos < size and text[pos] in _SPACE:
                pos = _skip(text, pos)
            if char == "}":
                break
            if char != ",":
                raise ProtocolError(f"expected ',' or '}}' at character {pos - 1}")
        if scalar_keys:
            return dict(entries), pos
        return KeyedPairs(entries), pos

    def _nested(self, scan, pos: int, depth: int) -> tuple[object, int]:
        """A value (or object key) json's scanner can read, else our own walk of it."""
        if not _json_cannot_open(self.text, pos):
            try:
                return scan(self.text, pos)
            except StopIteration:
                raise ProtocolError(f"expected a value at character {pos}") from None
            except RecursionError:
                raise ProtocolError(f"body nests deeper than {MAX_DEPTH} levels") from None
            except ValueError:
                pass  # a container json cannot read: walk it (without asking the scanner again)
        if depth + 1 > MAX_DEPTH:
            raise ProtocolError(f"body nests deeper than {MAX_DEPTH} levels")
        char = self.text[pos : pos + 1]
        if char == "{":
            return self.object(pos, depth + 1)
        if char == "[":
            return self.array(pos, depth + 1)
        raise ProtocolError(f"malformed value at character {pos}")

    def array(self, pos: int, depth: int) -> tuple[list, int]:
        text = self.text
        items: list[object] = []
        pos = _skip(text, pos + 1)
        if text.startswith("]", pos):
            return items, pos + 1
        while True:
            item, pos = self.value(pos, depth + 1)
            items.append(item)
            pos = _skip(text, pos)
            char = text[pos : pos + 1]
            pos = _skip(text, pos + 1)
            if char == "]":
                return items, pos
            if char != ",":
                raise ProtocolError(f"expected ',' or ']' at character {pos - 1}")
