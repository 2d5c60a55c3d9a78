"""Downloads: spreadsheet cells that cannot run as formulas, CSV written one line at a time and
starting with a byte order mark, and the Content-Disposition header of every attachment.

Group names, topics, keys, tags, reasons and usernames in our CSV and XLSX files come from
brokers, clients and users: a cell such as `=HYPERLINK(...)` would run as a formula when the
file is opened in Excel or LibreOffice (OWASP "CSV injection"). Every CSV writer here and every
XLSX cell goes through `safe_cell`."""

from __future__ import annotations

import csv
import datetime as dt
import re
import urllib.parse
from decimal import Decimal

# Every CSV we write starts with it (U+FEFF, EF BB BF in UTF-8): Excel reads a CSV without one in
# the system's code page (GBK on a Chinese Windows), which garbles every non-ASCII name. Readers
# that know UTF-8 skip it (Python: encoding "utf-8-sig"; LibreOffice, pandas)
BOM = "\ufeff"

# OWASP: a text cell starting with one of these is read as a formula (tab and CR too, because
# spreadsheets strip them and then read what follows)
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
# values a CSV writer keeps as they are: numbers (bool is an int) and dates are never formulas
_NOT_TEXT = (int, float, Decimal, dt.date, dt.time, dt.timedelta)


# standard base64 (RFC 4648 section 4), padded: groups of four of letters, digits, + and /, the
# last one ending in = or == (so "=" never comes first)
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class Base64Text(str):
    """Text known to be standard base64: written as it is, without the formula guard's `'`.

    A body that starts with the bits 111110 encodes to "+...": with a `'` in front, every
    base64 decoder refuses the cell (or, ignoring it, decodes other bytes). The guard is not
    needed there: a formula can only do harm by calling a function (HYPERLINK, WEBSERVICE, DDE
    through `cmd|`), which needs "(", "|" or "!", and base64 has none of them; the worst a
    spreadsheet can make of "+A1/B2" is arithmetic on cells. So a column that holds base64
    keeps it exact, and the exemption holds only for text checked to be base64 (`base64_cell`):
    anything else that reaches a cell is still guarded."""

    __slots__ = ()


def base64_cell(text: str) -> Base64Text:
    """`text` marked as base64 for `safe_cell`, after checking that it is nothing else."""
    if not _BASE64.fullmatch(text):
        raise ValueError("not standard base64: the formula guard would be needed")
    return Base64Text(text)


def safe_cell(value):
    """`value` for a spreadsheet cell: text starting with a formula trigger gets a leading `'`
    (shown as text, never evaluated); numbers, dates and None are returned unchanged, so they
    stay numeric cells (the number -5 stays -5, the text "-5" becomes "'-5"). Checked base64
    (Base64Text) is returned unchanged too: why at Base64Text."""
    if isinstance(value, str) and not isinstance(value, Base64Text) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def _csv_cell(value):
    # the csv module writes str() of anything else: neutralise that text, not the object
    if value is None or isinstance(value, _NOT_TEXT):
        return value
    return safe_cell(value if isinstance(value, str) else str(value))


class _Line:
    def write(self, value: str) -> str:
        return value


class SafeCsvWriter:
    """A csv writer whose every cell went through `safe_cell`; writerow returns what the
    underlying writer returns (the formatted line, for the streamed writer)."""

    def __init__(self, handle):
        self._writer = csv.writer(handle)

    def writerow(self, row):
        return self._writer.writerow([_csv_cell(value) for value in row])


def csv_writer(handle=None) -> SafeCsvWriter:
    """A formula-safe csv writer into `handle`; without one, writerow returns the formatted
    line (for StreamingHttpResponse: never the whole file in memory)."""
    return SafeCsvWriter(_Line() if handle is None else handle)


# what may stay in the plain `filename` parameter: printable ASCII without the quote and
# backslash (quoted-string escapes), slashes (paths) and % (some browsers percent-decode it,
# RFC 6266 appendix D); CR/LF and every other control or non-ASCII character goes too
_UNSAFE_IN_FILENAME = re.compile(r'[^\x20-\x7e]|["\\/%]')


def attachment(filename: str) -> str:
    """The Content-Disposition of a download named `filename`: an ASCII-safe `filename` for old
    clients and the exact name, UTF-8 and percent-encoded, in `filename*` (RFC 6266 / 5987).
    The header is plain ASCII whatever the name holds, so setting it never raises."""
    fallback = _UNSAFE_IN_FILENAME.sub("_", filename) or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{urllib.parse.quote(filename, safe='')}"
