"""Broker versions with known defects in resets of POP groups, named in the preview.

Upstream history: a server-side reset of a POP group has silently not applied more than once.
Each entry says which brokers it concerns (by version, "V5_3_3" as the brokers report it) and
for which groups; the preview names it as a warning, and the run's verification still reads
the consumers' side, so a reset that did not take is reported as such either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats


@dataclass(frozen=True)
class Defect:
    issue: str
    fixed_after: tuple[int, int, int]  # the last release that has it
    fifo_only: bool
    text: str


DEFECTS = (
    Defect(
        "apache/rocketmq#10229",
        (5, 3, 3),
        True,
        gettext_noop("a server-side reset does not take effect for FIFO (orderly) POP consumers"),
    ),
)


def parse_version(desc: str) -> tuple[int, int, int] | None:
    """ "V5_3_3" (brokerVersionDesc) or "5.3.3" -> (5, 3, 3); None when unreadable."""
    found = re.fullmatch(r"V?(\d+)[._](\d+)[._](\d+)(?:[._-].*)?", desc.strip())
    return tuple(int(x) for x in found.groups()) if found else None  # type: ignore[return-value]


def affecting(versions: dict[str, str], *, fifo: bool) -> list[str]:
    """The defects (issue names) that concern a reset of a POP group on these brokers; a broker
    of unknown version may have any of them."""
    return [
        d.issue
        for d in DEFECTS
        if (fifo or not d.fifo_only) and any((p := parse_version(v)) is None or p <= d.fixed_after
                                              for v in versions.values())
    ]  # fmt: skip


# The plan keeps its warnings in English, as the poll keeps health evidence: a request is read
# by people of other languages than its author's, and each page shows them translated
# (consumers/languages/evidence.py matches them against these formats).
KNOWN_DEFECT = gettext_noop(
    "Known broker defect (%(issue)s): on RocketMQ up to %(version)s %(defect)s. Affected here: "
    "%(brokers)s. The run's verification checks the consumers' side and will say if it did not take."
)
VERSION_UNKNOWN = gettext_noop(
    "Broker version unknown for %(brokers)s: cannot tell whether %(issue)s (%(defect)s) applies."
)


def pop_reset_warnings(versions: dict[str, str], *, fifo: bool) -> list[str]:
    """Warnings for a reset of a POP group on brokers of these versions ({broker: desc}), in
    English (see KNOWN_DEFECT)."""
    warnings = []
    for defect in DEFECTS:
        if defect.fifo_only and not fifo:
            continue
        hit = sorted(b for b, v in versions.items() if (p := parse_version(v)) is not None and p <= defect.fixed_after)
        unknown = sorted(b for b, v in versions.items() if parse_version(v) is None)
        if hit:
            warnings.append(
                KNOWN_DEFECT
                % {
                    "issue": defect.issue,
                    "version": ".".join(map(str, defect.fixed_after)),
                    "defect": defect.text,
                    "brokers": ", ".join(f"{b} ({versions[b]})" for b in hit),
                }
            )
        elif unknown:
            warnings.append(
                VERSION_UNKNOWN % {"brokers": ", ".join(unknown), "issue": defect.issue, "defect": defect.text}
            )
    return warnings


# in English, as the warnings above
IN_FLIGHT_NOTE = gettext_noop(
    "POP group: messages popped before the reset and not yet acknowledged (in flight) are delivered again "
    "when their invisible time ends, whatever the new offsets."
)
UNDO_NOTE = gettext_noop(
    "Undo of a POP group's reset: the popped offsets go back to where the reset found them; messages that "
    "were in flight at the time of the reset come back after their invisible time."
)

WARNING_FORMATS = (KNOWN_DEFECT, VERSION_UNKNOWN, IN_FLIGHT_NOTE, UNDO_NOTE, *(d.text for d in DEFECTS))
register_formats(*WARNING_FORMATS)
