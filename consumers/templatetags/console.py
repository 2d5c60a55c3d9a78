"""Template filters: numbers, ages and times, and "unknown" instead of a made-up value."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def known(value, note="", suffix=""):
    """The value, or a marked "unknown" whose tooltip says why."""
    if value is None:
        return format_html('<span class="unknown" title="{}">unknown</span>', note or "not known")
    if isinstance(value, float):
        return format_html("{}{}", f"{value:,.1f}", suffix)
    if isinstance(value, int) and not isinstance(value, bool):
        return format_html("{}{}", f"{value:,}", suffix)
    return format_html("{}{}", value, suffix)


@register.filter
def age(seconds) -> str:
    if seconds is None:
        return "never"
    seconds = max(0, float(seconds))
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


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


@register.filter
def absolute(value):
    return abs(value) if value is not None else value


@register.filter
def lookup_status(status: dict, row: dict) -> list:
    """The redrive records of one DLQ row, from a {"broker#queue:offset": [records]} map."""
    return status.get(f"{row['broker']}#{row['queue_id']}:{row['offset']}", [])
