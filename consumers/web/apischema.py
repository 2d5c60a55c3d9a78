"""The shapes of JSON bodies the API accepts: one schema per write endpoint, checked before
anything reaches a broker or the audit log.

JSON's types are loose in Python (`True` is an `int`, a list is as truthy as an object), so
every check here is exact: booleans are not integers, integers must fit a Java long, strings
have a size, and an unknown field is an error rather than something silently dropped. The
error names the field by its path (`params.offsets["t@b#0"]`) so a script's author can fix it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from .inputs import moment_problem, text_problem

JAVA_LONG_MAX = 2**63 - 1
MAX_BODY_BYTES = 1_000_000


class SchemaError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


@dataclass(frozen=True)
class Str:
    max_length: int = 255
    required: bool = False
    strip: bool = True

    def clean(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise SchemaError(field, f"must be a string, not {_kind(value)}")
        if len(value) > self.max_length:
            raise SchemaError(field, f"at most {self.max_length} characters")
        problem = text_problem(value)
        if problem:
            raise SchemaError(field, problem)
        value = value.strip() if self.strip else value
        if self.required and not value:
            raise SchemaError(field, "must not be empty")
        return value


@dataclass(frozen=True)
class Int:
    min: int = 0
    max: int = JAVA_LONG_MAX
    nullable: bool = False

    def clean(self, value: Any, field: str) -> int | None:
        if value is None and self.nullable:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise SchemaError(field, f"must be a whole number, not {_kind(value)}")
        if not self.min <= value <= self.max:
            raise SchemaError(field, f"must be between {self.min} and {self.max}")
        return value


@dataclass(frozen=True)
class Moment:
    """Milliseconds since the epoch, from 2000 to a day from now, or to now with `past_only`
    (inputs.moment_problem)."""

    nullable: bool = False
    past_only: bool = False

    def clean(self, value: Any, field: str) -> int | None:
        value = Int(0, JAVA_LONG_MAX, nullable=self.nullable).clean(value, field)
        now_ms = int(time.time() * 1000)
        problem = None if value is None else moment_problem(value, now_ms=now_ms, past_only=self.past_only)
        if problem:
            raise SchemaError(field, problem)
        return value


@dataclass(frozen=True)
class Bool:
    def clean(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise SchemaError(field, f"must be true or false, not {_kind(value)}")
        return value


@dataclass(frozen=True)
class Choice:
    choices: tuple[str, ...]

    def clean(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise SchemaError(field, f"must be one of {', '.join(self.choices)}")
        return value


@dataclass(frozen=True)
class List:
    item: Any
    max_items: int = 1000

    def clean(self, value: Any, field: str) -> list:
        if not isinstance(value, list):
            raise SchemaError(field, f"must be a list, not {_kind(value)}")
        if len(value) > self.max_items:
            raise SchemaError(field, f"at most {self.max_items} items")
        return [self.item.clean(v, f"{field}[{i}]") for i, v in enumerate(value)]


@dataclass(frozen=True)
class Map:
    """An object whose keys are data (queue labels), each value of one type."""

    value: Any
    max_items: int = 10_000
    max_key_length: int = 512

    def clean(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise SchemaError(field, f"must be an object, not {_kind(value)}")
        if len(value) > self.max_items:
            raise SchemaError(field, f"at most {self.max_items} entries")
        for key in value:
            if not key.strip() or len(key) > self.max_key_length:
                raise SchemaError(field, f"keys must be 1 to {self.max_key_length} characters")
            problem = text_problem(key)
            if problem:
                raise SchemaError(field, f"keys {problem}")
        return {key: self.value.clean(v, f"{field}[{json.dumps(key)}]") for key, v in value.items()}


@dataclass(frozen=True)
class AnyObject:
    """Any JSON object, checked later by a schema chosen from another field (a change's params
    by its kind)."""

    def clean(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise SchemaError(field, f"must be an object, not {_kind(value)}")
        return value


@dataclass(frozen=True)
class Obj:
    """An object with named fields; absent optional fields are left out of the result."""

    fields: dict
    required: tuple[str, ...] = ()

    def clean(self, value: Any, field: str = "body") -> dict:
        if not isinstance(value, dict):
            raise SchemaError(field, f"must be a JSON object, not {_kind(value)}")
        unknown = sorted(set(value) - set(self.fields))
        if unknown:
            raise SchemaError(f"{field}.{unknown[0]}", f"unknown field; expected one of {', '.join(self.fields)}")
        for name in self.required:
            if name not in value:
                raise SchemaError(f"{field}.{name}", "is required")
        return {name: self.fields[name].clean(v, f"{field}.{name}") for name, v in value.items()}


def parse(raw: bytes, schema: Obj) -> dict:
    """The body checked against its schema; an empty body is an empty object."""
    if len(raw) > MAX_BODY_BYTES:
        raise SchemaError("body", f"at most {MAX_BODY_BYTES} bytes")
    try:
        data = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than any real body
        raise SchemaError("body", "must be valid JSON (UTF-8)") from None
    return schema.clean(data, "body")
