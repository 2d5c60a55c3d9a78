"""Health evidence, allocation diagnostics, the notes beside a group's numbers, reset plans'
warnings, a change's verification notes and alerts' evidence in the reader's language.

A poll writes each finding's evidence and each diagnostic once, in English, into the group's
snapshot document: the API's `evidence` and `message` fields and the alerts keep them so; a
change keeps its verification notes in its result so. A page shows them translated: the
sentence is matched against the English formats it was made from (each feature registers
its own: consumers/live/health.py, consumers/live/diagnostics.py...) and formatted again with the
translated format and the same values. A sentence made of several joined by "; " is translated
part by part: a value inside a format (not its last) is read without "; ", so that two sentences
joined are not read as one whose value swallowed the first's end and the second's start. A
sentence no format made (a reason passed through from elsewhere) is shown as it is."""

from __future__ import annotations

import functools
import re

from django.utils.translation import get_language, gettext

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _pattern(fmt: str, *, loose: bool = False) -> re.Pattern:
    """The regular expression of `fmt`. Strict (the default): a value followed by more of the
    format holds no "; "; the last value may (a list of reasons). Loose: any value may."""
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(fmt):
        parts.append(re.escape(fmt[last : match.start()]))
        inner = r"(?:(?!; ).)+?" if match.end() < len(fmt) and not loose else ".+?"
        parts.append(f"(?P<{match.group(1)}>{inner})")
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
def _formats(loose: bool = False) -> tuple[tuple[str, re.Pattern], ...]:
    # the most specific first (the most text outside its placeholders): a sentence two formats
    # could have made is read as the one that says more, whatever order features registered in
    ordered = sorted(_registered, key=lambda fmt: (-len(_PLACEHOLDER.sub("", fmt)), fmt))
    return tuple((fmt, _pattern(fmt, loose=loose)) for fmt in ordered)


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
    parts, shown, start, any_part = text.split("; "), [], 0, False
    while start < len(parts):
        for end in range(len(parts), start, -1):
            found = _translated("; ".join(parts[start:end]))
            if found is not None or end == start + 1:
                shown.append("; ".join(parts[start:end]) if found is None else found)
                any_part = any_part or found is not None
                start = end
                break
    if not any_part:
        # no part a format made: perhaps one sentence whose value holds "; " (an error that says
        # "a; b" inside parentheses), read as one when a format made the whole
        loose = _translated(text, loose=True)
        if loose is not None:
            return loose
    return "; ".join(shown)


def _translated(text: str, *, loose: bool = False) -> str | None:
    """`text` made again from the translated format that made it; None when no format did."""
    for fmt, pattern in _formats(loose):
        match = pattern.match(text)
        if match:
            values = {name: translate_evidence(value) for name, value in match.groupdict().items()}
            return gettext(fmt) % values
    return None
