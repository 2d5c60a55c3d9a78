"""A report as CSV: the per-period rows (gaps included, empty cells for unknown), UTC times in
ISO 8601, and the source in every row so the file stands on its own.

The headers (and the words: status, source) are in the report's language; the values stay
machine-readable in every language: numbers unformatted (no grouping, a point for decimals),
dates and times ISO 8601, so a script or a spreadsheet reads a Chinese file as an English one."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

from django.utils.translation import gettext

from ..web.csvstream import csv_writer
from .content import DETAIL_COLUMNS, ReportContent


def cell(value):
    """A value as written to a CSV cell. Numbers stay numbers (the csv module writes a float's
    repr), so the formula-safe writer leaves a negative number alone and neutralises only text."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (int, Decimal)):
        return value
    return str(value)


def write_csv(content: ReportContent, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8-sig") as handle:  # with a BOM: csvstream.BOM
        writer = csv_writer(handle)  # formula-safe: group names come from the brokers
        writer.writerow([str(header) for _, header, _ in DETAIL_COLUMNS] + [gettext("source")])
        for row in content.detail:
            writer.writerow([cell(row.get(key)) for key, _, _ in DETAIL_COLUMNS] + [content.source])
