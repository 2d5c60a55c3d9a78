"""The rules every piece of text from outside meets before it is used: the API's schemas
(consumers/web/apischema.py), the forms and the query strings all check through here, so a rule
fixed once holds everywhere.

- Text is valid Unicode: no lone UTF-16 surrogates (JSON can spell them, "\\ud800"; no database,
  Redis key or broker frame can encode them) and no NUL.
- Digits mean ASCII digits: `str.isdigit()` says yes to "²" and "①", which `int()` refuses,
  and `int()` itself reads "٣" (Arabic-Indic) and "３" (fullwidth) as 3. Forms read numbers
  with AsciiIntegerField and times with AsciiDateTimeField, never with Django's own.
- Every number a form reads has a range, said in full when a value is outside it.
- A moment given in milliseconds lies between 2000-01-01 and a day from now (a reset to a
  time cannot point before any RocketMQ release, and 2^63 - 1 is no year Python can show);
  a filter's start is not after now (nothing is stored after it yet).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re

from django import forms
from django.core import validators
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

_ASCII_INT = re.compile(r"-?[0-9]+")
_SURROGATE = re.compile("[\ud800-\udfff]")

EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
EARLIEST_MS = int(EARLIEST.timestamp() * 1000)
FUTURE_SLACK = dt.timedelta(days=1)
_LAST_SHOWN_MS = int(dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC).timestamp() * 1000)
# more significant digits than any range here holds (2^63 has 19): such a number is out of range
# without being built (int() refuses more than 4,300 digits, and building one costs time)
_MAX_DIGITS = 25


def text_problem(value: str) -> str | None:
    """Why `value` cannot be used as text, or None when it can."""
    if _SURROGATE.search(value):
        return _("must be valid Unicode (it holds a lone surrogate)")
    if "\x00" in value:
        return _("must not contain NUL characters")
    return None


def is_ascii_int(text: str) -> bool:
    """An optional minus and ASCII digits only (not "²", "١", "①" or "+1")."""
    return _ASCII_INT.fullmatch(text) is not None


def ascii_int(text: str) -> int | None:
    """The integer `text` spells in ASCII digits, or None."""
    return int(text) if is_ascii_int(text) else None


def moment_problem(ms: int, *, now_ms: int, past_only: bool) -> str | None:
    """Why `ms` (milliseconds since the epoch) is not a moment the console can use, or None."""
    if ms < EARLIEST_MS:
        return _("must be after %(earliest)s (milliseconds since the epoch, UTC)") % {
            "earliest": f"{EARLIEST:%Y-%m-%d}"
        }
    latest = now_ms if past_only else now_ms + int(FUTURE_SLACK.total_seconds() * 1000)
    if ms > latest:
        if ms > _LAST_SHOWN_MS:
            return _("is in the future (after the year 9999)")
        when = {"when": f"{dt.datetime.fromtimestamp(ms / 1000, dt.UTC):%Y-%m-%d %H:%M:%S}"}
        if past_only:
            return _("%(when)s UTC is in the future: nothing is stored after it yet") % when
        return _("%(when)s UTC is in the future") % when
    return None


def when_problem(moment: dt.date | dt.datetime, *, now_ms: int, past_only: bool) -> str | None:
    """moment_problem for a date or time typed in a form (UTC when it names no zone; a date is
    its midnight), worded for a form: no milliseconds."""
    if not isinstance(moment, dt.datetime):
        moment = dt.datetime.combine(moment, dt.time())
    moment = moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment
    if moment < EARLIEST:
        return _("must be on or after %(earliest)s (UTC)") % {"earliest": f"{EARLIEST:%Y-%m-%d}"}
    return moment_problem(int(moment.timestamp() * 1000), now_ms=now_ms, past_only=past_only)


def now_ms() -> int:
    return int(dt.datetime.now(dt.UTC).timestamp() * 1000)


def add_range_problems(form: forms.Form, data: dict, start: str, end: str) -> None:
    """when_problem for a typed range (fields `start` and `end` of `form`), each problem added to
    its field: from 2000 on; the start not after now (nothing is stored after it yet), the end up
    to a day ahead (a clock, or a date in a zone east of UTC)."""
    for name, past_only in ((start, True), (end, False)):
        problem = when_problem(data[name], now_ms=now_ms(), past_only=past_only) if data.get(name) else None
        if problem:
            form.add_error(name, problem)


def range_text(low: int, high: int) -> str:
    """The refusal of a number outside [low, high]: the whole range, so one refusal says what fits."""
    return _("must be between %(min)s and %(max)s") % {"min": low, "max": high}


def range_problem(number: int, low: int, high: int) -> str | None:
    return None if low <= number <= high else range_text(low, high)


def read_int(text: str, low: int, high: int) -> int:
    """The integer `text` spells in ASCII digits, within [low, high]; ValueError saying why not."""
    text = text.strip()
    if not is_ascii_int(text):
        raise ValueError(_("write a whole number in digits 0-9"))
    if len(text.lstrip("-").lstrip("0")) > _MAX_DIGITS:
        raise ValueError(range_text(low, high))
    number = int(text)
    problem = range_problem(number, low, high)
    if problem:
        raise ValueError(problem)
    return number


class AsciiIntegerField(forms.IntegerField):
    """An integer written in ASCII digits, within [min_value, max_value] (read_int). Both bounds
    are required: no number here is unbounded. Django's IntegerField reads with int(), so "٣",
    "３", "+3" and "1_000" would pass."""

    def __init__(self, *, min_value: int, max_value: int, **kwargs):
        super().__init__(min_value=min_value, max_value=max_value, **kwargs)
        # read_int checks the range with one message for both ends, against the bounds the field
        # has when it cleans (a form may set them from settings in its __init__)
        bounds = (validators.MinValueValidator, validators.MaxValueValidator)
        self.validators = [v for v in self.validators if not isinstance(v, bounds)]

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return value  # an initial value, set in code
        try:
            return read_int(str(value), self.min_value, self.max_value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None


class AsciiDateTimeField(forms.DateTimeField):
    """Django's DateTimeField tries ISO 8601 first, which reads "٢٠٢٦-٠١-٠١T٠١:٠١" as a time."""

    def to_python(self, value):
        if isinstance(value, str) and not value.isascii():
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


BAD_CURSOR = gettext_lazy("the page cursor is not valid; start from the first page")


def encode_cursor(cursor: dict) -> str:
    """A page cursor (a small JSON object) as a URL-safe string."""
    return base64.urlsafe_b64encode(json.dumps(cursor, sort_keys=True).encode()).decode()


def decode_cursor(raw: str, entry_ok) -> dict:
    """encode_cursor's string back, every (key, value) passing `entry_ok`; ValueError (saying
    BAD_CURSOR) for anything else."""
    try:
        cursor = json.loads(base64.urlsafe_b64decode(raw.encode()))
    except (ValueError, binascii.Error):
        raise ValueError(BAD_CURSOR) from None
    if not isinstance(cursor, dict) or not all(entry_ok(k, v) for k, v in cursor.items()):
        raise ValueError(BAD_CURSOR)
    return cursor


class DateInput(forms.DateInput):
    """A browser's date picker. Its value must be YYYY-MM-DD whatever the page's language: Django
    would render the language's own format (2026/11/21 in Chinese), which the browser rejects,
    leaving the field empty."""

    input_type = "date"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%d")
