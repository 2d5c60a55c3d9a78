"""The rules every piece of text from outside meets before it is used: the API's schemas
(consumers/apischema.py), the forms and the query strings all check through here, so a rule
fixed once holds everywhere.

- Text is valid Unicode: no lone UTF-16 surrogates (JSON can spell them, "\\ud800"; no database,
  Redis key or broker frame can encode them) and no NUL.
- Digits mean ASCII digits: `str.isdigit()` says yes to "²" and "①", which `int()` refuses.
- A moment given in milliseconds lies between 2000-01-01 and a day from now (a reset to a
  time cannot point before any RocketMQ release, and 2^63 - 1 is no year Python can show).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

_ASCII_INT = re.compile(r"-?[0-9]+")
_SURROGATE = re.compile("[\ud800-\udfff]")

EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
EARLIEST_MS = int(EARLIEST.timestamp() * 1000)
FUTURE_SLACK = dt.timedelta(days=1)
_LAST_SHOWN_MS = int(dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC).timestamp() * 1000)


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
