"""Template filters: numbers, ages and times, and "unknown" instead of a made-up value."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils.formats import date_format, number_format
from django.utils.html import format_html, format_html_join, json_script
from django.utils.translation import gettext, ngettext

register = template.Library()
LONG_NAME = 60  # characters: a report cell this long is set smaller to fit unbroken


@register.simple_tag
def known(value, note="", suffix=""):
    """The value, or a marked "unknown" whose tooltip says why."""
    if value is None:
        why = note or gettext("not known")
        return format_html('<span class="unknown" title="{}">{}</span>', why, gettext("unknown"))
    if isinstance(value, float):
        return format_html("{}{}", number_format(value, 1, use_l10n=True, force_grouping=True), suffix)
    if isinstance(value, int) and not isinstance(value, bool):
        return format_html("{}{}", number_format(value, use_l10n=True, force_grouping=True), suffix)
    return format_html("{}{}", value, suffix)


@register.filter
def age(seconds) -> str:
    if seconds is None:
        return gettext("never")
    seconds = max(0, float(seconds))
    if seconds < 90:
        return gettext("%(n)s s") % {"n": f"{seconds:.0f}"}
    if seconds < 5400:
        return gettext("%(n)s min") % {"n": f"{seconds / 60:.0f}"}
    if seconds < 172800:
        return gettext("%(n)s h") % {"n": f"{seconds / 3600:.1f}"}
    return gettext("%(n)s d") % {"n": f"{seconds / 86400:.1f}"}


@register.filter
def epoch_ms(value) -> str:
    if not value:
        return "—"
    return dt.datetime.fromtimestamp(value / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


@register.filter
def epoch(value) -> str:
    if not value:
        return "—"
    return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _clamped():
    return format_html(
        '<span class="badge stale" title="{}">{}</span>',
        gettext("the strategy asked for an offset outside [min, max]"),
        gettext("clamped"),
    )


def _never():
    return format_html('<span class="badge stale">{}</span>', gettext("never committed"))


def _effect(row: dict) -> str:
    delta = row["delta"]
    if delta is None:
        return row["note"] or ""
    if delta < 0:
        return ngettext("%(count)s message re-consumed", "%(count)s messages re-consumed", -delta) % {"count": -delta}
    if delta > 0:
        return ngettext("%(count)s message skipped", "%(count)s messages skipped", delta) % {"count": delta}
    return gettext("no change")


@register.simple_tag
def plan_rows(rows: list[dict]):
    """The rows of a reset plan. Built here rather than in a template loop: a 1,024-queue preview
    spent more time in the template engine (about 0.1 ms a row) than reading the broker."""
    clamped, never = _clamped(), _never()
    unknown = format_html('<span class="unknown">{}</span>', gettext("never committed"))
    return format_html_join(
        "\n",
        '<tr class="plan-row" data-label="{}" data-target="{}"><td>{}</td><td>{}</td><td class="num">{}</td>'
        '<td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td>'
        "<td>{}</td><td>{}{}</td></tr>",
        (
            (
                r["label"], "" if r["target"] is None else r["target"], r["topic"], r["broker"], r["queue_id"],
                r["min"], r["max"],
                unknown if r["current"] is None else r["current"],
                "—" if r["target"] is None else r["target"], _effect(r),
                clamped if r["clamped"] else "", never if r["never_committed"] else "",
            )
            for r in rows
        ),
    )  # fmt: skip


@register.filter
def lookup_status(status: dict, row: dict) -> list:
    """The redrive records of one DLQ row, from a {"broker#queue:offset": [records]} map."""
    return status.get(f"{row['broker']}#{row['queue_id']}:{row['offset']}", [])


@register.filter
def percent(value) -> str:
    return "" if value is None else f"{value:.1%}"


@register.simple_tag
def report_cell(value, columns, index: int):
    """One cell of a report table: numbers right-aligned and formatted by the column's kind and
    the active language (grouping, periods as its short dates), unknown values marked as unknown
    (never 0)."""
    kind = columns[index][2]
    if value is None:
        return format_html('<td class="unknown{}">{}</td>', "" if kind == "text" else " num", gettext("unknown"))
    if kind == "int":
        text = number_format(round(value), use_l10n=True, force_grouping=True)
    elif kind == "float":
        text = number_format(value, 1, use_l10n=True, force_grouping=True)
    elif kind == "percent":
        text = number_format(value * 100, 1, use_l10n=True) + "%"
    elif kind == "period" and isinstance(value, dt.datetime):  # an hour (UTC, as the report says)
        text = date_format(value, "SHORT_DATETIME_FORMAT")
    elif kind == "period" and isinstance(value, dt.date):
        return format_html('<td class="text">{}</td>', date_format(value, "SHORT_DATE_FORMAT"))
    else:
        # a name is never broken across lines (Chromium would break it at a hyphen): long ones get smaller
        size = " long" if kind == "text" and len(str(value)) > LONG_NAME else ""
        return format_html('<td class="text{}">{}</td>', size, value)
    return format_html('<td class="num">{}</td>', text)


@register.filter
def hide_bodies_for(data, user):
    """`data` as `user` may see it: body searches are for operators only (identity/bodies.py)."""
    from ..identity import hide_bodies

    return hide_bodies(user, data)


@register.filter
def consumption_label(value) -> str:
    """How a group's clients consume, in words (diagnostics.CONSUMPTION); "—" with no client."""
    from ..live.diagnostics import CONSUMPTION

    return gettext(CONSUMPTION[value]) if value in CONSUMPTION else value or "—"


@register.filter
def evidence(text) -> str:
    """A health finding's evidence or a diagnostic (English in the documents) in the reader's language."""
    from ..languages.evidence import translate_evidence

    return translate_evidence(text)


@register.simple_tag
def plotly_locale():
    """The active language's plotly.js locale (month names, date order, the mode bar's texts) for
    static/js/base.js's chartConfig; nothing in English, plotly's own."""
    from ..stats.charts import plotly_locale as locale_of

    locale = locale_of()
    return json_script(locale, "plotly-locale") if locale else ""


@register.filter
def item(mapping, key):
    """mapping[key], None when absent (a key that is a variable, which the dot syntax cannot take)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def wire_value(value) -> str:
    """A config value as the broker's JSON writes it (true/false, not Python's True/False)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "—" if value is None else str(value)
