"""Parser for the bodies Java brokers write with fastjson.

fastjson writes maps with non-string keys without quoting them: bare numbers
(`{0:"127.0.0.1:10911"}`) and whole objects (`{{"brokerName":"b","queueId":0,"topic":"t"}:5}`).
Neither is JSON. We try `json.loads` first; when it refuses, a small structural parser walks
the containers and hands every sub-value back to json's C scanner, so the Python-level work
is one step per map entry, not per character. Strings are only ever read by json's own
scanner, so braces, quotes or colons inside them cannot confuse the walk.

Bare numeric keys (Map<Integer, ...>, the broker's offset-table dump is made of them) have a
faster way: when the body allows it, whole-text operations quote them and json reads the
result at once (`_quote_numeric_keys`), about 3x json.loads of the same data instead of 15x.

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


def loads(data: bytes | str, *, numeric_keys: bool = True) -> object:
    """Parse a fastjson (or plain JSON) body; any malformed input raises ProtocolError.

    Bare numeric keys become ints (or floats), or with `numeric_keys=False` the strings they
    were written as: what json.loads gives for the same data written as standard JSON, and
    faster, for a reader that wants only some of them."""
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
    quick = _with_quoted_numeric_keys(text, numeric_keys)
    if quick is not _REFUSED:
        return quick
    parser = _Parser(text, numeric_keys)
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


_REFUSED = object()
_MARK = " "  # what a quoted numeric key starts with: int() and float() skip it
# where a numeric key starts once its closing quote is in: after '{', or after ',' when the
# number runs up to '":' (a number in an array runs up to ',' or ']')
_KEY_AFTER_BRACE = re.compile(r"\{(?=-?\d)")
_KEY_AFTER_COMMA = re.compile(r',(?=-?\d[\d.eE+-]*":)')


def _quote_numeric_keys(text: str, mark: str) -> tuple[str, int] | None:
    """`text` with every bare numeric key quoted (its text after `mark`), and how many keys;
    None when that cannot be done with whole-text operations, which run in C.

    With no backslash in the text, splitting at '"' separates the strings (odd pieces) from
    what is between them. There, fastjson writes no whitespace, so a ':' either opens a piece
    (it follows a string key) or follows a key that is not a string: a number when json can
    read the result. Keys are counted twice (closing and opening quotes), and any difference
    refuses the body: a number in an array, a literal or object key, a stray character."""
    if "\\" in text or "\x00" in text or "}:" in text or "]:" in text:
        return None  # escapes; or object or array keys (Map<MessageQueue, ...>), which the walk reads fast
    parts = text.split('"')
    if len(parts) % 2 == 0:
        return None  # a string that never ends
    between = "\x00".join(parts[0::2])
    size = len(between)
    between = between.replace(":", '":').replace('\x00":', "\x00:")
    closed = len(between) - size
    if not closed:
        return None
    size = len(between)
    between = _KEY_AFTER_COMMA.sub(',"' + mark, _KEY_AFTER_BRACE.sub('{"' + mark, between))
    if (len(between) - size) != closed * (1 + len(mark)):
        return None
    parts[0::2] = between.split("\x00")
    return '"'.join(parts), closed


def _with_quoted_numeric_keys(text: str, numeric_keys: bool) -> object:
    """The body read by json once its numeric keys are quoted (then, unless `numeric_keys` is
    off, made numbers again); _REFUSED when this way does not apply."""
    # the mark must start no string of the body's own: it tells a quoted key from a real one
    mark = _MARK if numeric_keys else ""
    if mark and '"' + mark in text:
        return _REFUSED
    quoted = _quote_numeric_keys(text, mark)
    if quoted is None:
        return _REFUSED
    body, keys = quoted
    if not numeric_keys:
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            return _REFUSED
    converted = [0]

    def numbers(obj: dict) -> dict:
        for key in obj:  # only the first key: a map's keys are all numbers (else refused below)
            if key[:1] != mark:
                return obj
            converted[0] += len(obj)
            try:
                return dict(zip(map(int, obj), obj.values(), strict=True))  # int() skips the mark
            except ValueError:
                return {_number(k): v for k, v in obj.items()}
        return obj

    try:
        value = json.loads(body, object_hook=numbers)
    except (ValueError, RecursionError):
        return _REFUSED
    # a map mixing string and numeric keys (first a string) would keep marked keys
    return value if converted[0] == keys else _REFUSED


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)  # a ValueError here too: not a number key at all


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
    def __init__(self, text: str, numeric_keys: bool = True):
        self.text = text
        self.numeric_keys = numeric_keys

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
            if not self.numeric_keys:
                return number, match.end()
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
