"""A report as XLSX (openpyxl, write-only: rows stream to the file): an About sheet with the
parameters, source, time zone and coverage; a Summary sheet; a Daily or Hourly sheet. Cells are
typed (dates, integers, decimals, percentages) with number formats, headers are frozen and
filterable, unknown values are empty cells.

Sheet names, headers and labels are in the report's language; the cells keep their types in
every language (a number is a number, a date a date). The number formats are Excel's codes, in
which "," and "." stand for the reader's own separators: the spreadsheet shows them the local way."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from django.utils.translation import gettext, pgettext
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from ..web.csvstream import safe_cell
from .content import DETAIL_COLUMNS, SUMMARY_COLUMNS, ReportContent, granularity_text

NUMBER_FORMATS = {"int": "#,##0", "float": "#,##0.0", "percent": "0.0%", "period": "yyyy-mm-dd", "text": "@",
                  "datetime": "yyyy-mm-dd hh:mm:ss", "bool": "General"}  # fmt: skip
WIDTHS = {"text": 28, "period": 18, "percent": 10, "int": 13, "float": 13, "datetime": 20, "bool": 8}
BOLD = Font(bold=True)


def write_xlsx(content: ReportContent, path: Path) -> None:
    book = Workbook(write_only=True)
    _about(book, content)
    write_sheet(book, gettext("Summary"), SUMMARY_COLUMNS, content.summary)
    name = gettext("Daily") if content.spec.granularity == "daily" else gettext("Hourly")
    write_sheet(book, name, DETAIL_COLUMNS, content.detail, hourly=content.spec.granularity == "hourly")
    book.save(path)


def _about(book: Workbook, content: ReportContent) -> None:
    sheet = book.create_sheet(pgettext("report sheet", "About"))
    sheet.column_dimensions["A"].width = 22
    sheet.column_dimensions["B"].width = 90
    spec = content.spec
    groups = gettext("containing '%(filter)s'") % {"filter": spec.group_filter}
    rows = [
        (gettext("Lag report"), ""),
        (gettext("clusters"), ", ".join(spec.clusters)),
        (gettext("groups"), groups if spec.group_filter else gettext("all")),
        (gettext("from"), spec.first),
        (gettext("to"), spec.last),
        (gettext("granularity"), granularity_text(spec.granularity)),
        (gettext("source"), content.source),
        (gettext("time zone"), content.time_zone),
        (gettext("generated"), content.generated_at.astimezone(dt.UTC).replace(tzinfo=None)),
    ]
    coverage = gettext("coverage %(cluster)s")
    rows += [(coverage % {"cluster": cluster}, share) for cluster, share in content.coverage.items()]
    rows += [(gettext("note"), note) for note in content.notes]
    unknown = gettext("unknown (no statistics)")
    for label, value in rows:
        value_cell = WriteOnlyCell(sheet, value=safe_cell(unknown if value is None else value))
        if isinstance(value, dt.datetime):
            value_cell.number_format = "yyyy-mm-dd hh:mm:ss"
        elif isinstance(value, dt.date):
            value_cell.number_format = "yyyy-mm-dd"
        elif isinstance(value, float):
            value_cell.number_format = "0.0%"
        label_cell = WriteOnlyCell(sheet, value=safe_cell(label))
        label_cell.font = BOLD
        sheet.append([label_cell, value_cell])


def write_sheet(book: Workbook, title: str, columns, rows: list[dict], *, hourly: bool = False) -> None:
    """A sheet of `rows` under `columns` ((key, header, kind) triples): typed, formatted cells,
    the header row frozen and filterable."""
    sheet = book.create_sheet(title)
    sheet.freeze_panes = "C2"  # the header row and the cluster and group columns stay in view
    for index, (_, _, kind) in enumerate(columns, start=1):
        sheet.column_dimensions[get_column_letter(index)].width = WIDTHS[kind]
    sheet.auto_filter.ref = f"A1:{get_column_letter(len(columns))}{len(rows) + 1}"
    header = []
    for _, label, _ in columns:
        cell = WriteOnlyCell(sheet, value=safe_cell(str(label)))  # lazy headers: in the active language
        cell.font = BOLD
        header.append(cell)
    sheet.append(header)
    formats = [NUMBER_FORMATS[kind] for _, _, kind in columns]
    if hourly:
        kinds = [kind for _, _, kind in columns]
        formats = ["yyyy-mm-dd hh:mm" if kind == "period" else f for kind, f in zip(kinds, formats, strict=True)]
    keys = [key for key, _, _ in columns]
    for row in rows:
        cells = []
        for key, number_format in zip(keys, formats, strict=True):
            value = row.get(key)
            if isinstance(value, dt.datetime):
                value = value.astimezone(dt.UTC).replace(tzinfo=None)  # Excel has no time zones: UTC, says About
            # group names and statuses come from brokers; openpyxl would store text starting with = as a formula
            cell = WriteOnlyCell(sheet, value=safe_cell(value))
            if value is not None:
                cell.number_format = number_format
            cells.append(cell)
        sheet.append(cells)
