"""Health evidence, allocation diagnostics, the notes beside a group's numbers, reset plans'
warnings, a change's verification notes and alerts' evidence in the reader's language.

A poll writes each finding's evidence and each diagnostic once, in English, into the group's
snapshot document: the API's `evidence` and `message` fields and the alerts keep them so; a
change keeps its verification notes in its result so. A page shows them translated: the
sentence is matched against the English formats it was made from (each feature registers
its own: consumers/live/health.py, consumers/live/diagnostics.py...) and formatted again with the
translated format and the same values. A sentence made of several joined by "; " is translated
part by part. A sentence no format made (a reason passed through from elsewhere) is shown as it
is."""

from __future__ import annotations

import functools
import re

from django.utils.translation import get_language, gettext

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _pattern(fmt: str) -> re.Pattern:
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(fmt):
        parts.append(re.escape(fmt[last : match.start()]))
        parts.append(f"(?P<{match.group(1)}>.+?)")
        last = match.end()
    parts.append(re.escape(fmt[last:]))
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


_registered: dict[str, None] = {}  # the formats, in the order registered (a set that keeps order)


def register_formats(*formats: str) -> None:
    """The English formats a feature's evidence is made from. Each feature registers its own where
    it defines them (this module names no feature); the app's ready() imports every module that
    does, so each process knows them all before a page asks."""
    for fmt in formats:
        _registered.setdefault(fmt)
    _formats.cache_clear()


@functools.cache
def _formats() -> tuple[tuple[str, re.Pattern], ...]:
    # the most specific first (the most text outside its placeholders): a sentence two formats
    # could have made is read as the one that says more, whatever order features registered in
    ordered = sorted(_registered, key=lambda fmt: (-len(_PLACEHOLDER.sub("", fmt)), fmt))
    return tuple((fmt, _pattern(fmt)) for fmt in ordered)


def translate_evidence(text) -> str:
    if not text or not isinstance(text, str):
        return text
    if (get_language() or "en") == "en":  # written in English: nothing to match (a 100-row list asks 100 times)
        return text
    whole = _translated(text)
    if whole is not None or "; " not in text:
        return text if whole is None else whole
    # sentences joined by "; " (a note and what followed it): from the left, the longest run of
    # parts that one format made (a format may hold "; " itself), else the part as it is
    parts, shown, start = text.split("; "), [], 0
    while start < len(parts):
        for end in range(len(parts), start, -1):
            found = _translated("; ".join(parts[start:end]))
            if found is not None or end == start + 1:
                shown.append("; ".join(parts[start:end]) if found is None else found)
                start = end
                break
    return "; ".join(shown)


def _translated(text: str) -> str | None:
    """`text` made again from the translated format that made it; None when no format did."""
    for fmt, pattern in _formats():
        match = pattern.match(text)
        if match:
            values = {name: translate_evidence(value) for name, value in match.groupdict().items()}
            return gettext(fmt) % values
    return None
