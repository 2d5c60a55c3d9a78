"""Template filters that put what the console stores in the reader's words: codes (states,
actions, triggers: consumers/languages/labels.py), an alert's evidence, a reset strategy, and an
audit event's details as readable text rather than a Python dict."""

from __future__ import annotations

import json

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

register = template.Library()


@register.filter
def word(code, table: str) -> str:
    """`{{ change.state|word:"change state" }}`: the code in the reader's language (the tables:
    languages/labels.py)."""
    from ..languages.labels import label

    return label(table, code)


@register.filter
def alert_evidence(text) -> str:
    """An alert's evidence or end reason (English as stored, "STOPPED: <finding>; ..."), as the
    alert's e-mail says it in the reader's language (alerts/channels.py: evidence_text)."""
    from ..alerts.channels import evidence_text

    return evidence_text(text) if text else text


@register.filter
def strategy_name(code) -> str:
    """A reset strategy's code (as stored in a request's params) in words (resets.strategies.STRATEGIES)."""
    from ..resets.strategies import STRATEGIES

    return gettext(STRATEGIES[code]) if code in STRATEGIES else code


@register.filter
def details_text(details) -> str:
    """An audit event's details as "key: value" pairs, one per line: keys are the stored field
    names (identifiers, as in the CSV and the API), nested objects flattened to dotted keys, lists
    of plain values joined by commas, anything deeper as JSON. Never a Python repr."""
    if not isinstance(details, dict):
        return "" if details in (None, "") else _value(details)
    pairs = list(_flattened(details, ""))
    return format_html_join(mark_safe("<br>"), '<span class="detail"><code>{}</code>: {}</span>', pairs)


def _flattened(data: dict, prefix: str):
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _flattened(value, f"{name}.")
        else:
            yield name, _value(value)


def _value(value) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "—"
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return ", ".join(str(v) for v in value) or "—"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
