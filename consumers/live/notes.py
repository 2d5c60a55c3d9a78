"""The notes a poll writes beside a group's numbers (building.build_document): what a number
measures for POP and broadcasting groups, and why one is unknown.

In English, as the health evidence: written once into the group's document for every reader,
kept so by the API (`lag_seconds_measures`, `consume_tps_note`, `in_flight_note`, a queue's
`lag_seconds_note`). A page shows them in the reader's language, parsed back by these formats
(consumers/languages/evidence.py)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats

# POP groups: what the lag in seconds measures
POP_LAG_SECONDS = gettext_noop(
    "the age of the oldest message nobody has popped yet; messages popped and not yet acknowledged "
    "(in flight) are not counted"
)
# the consume TPS: for POP groups, for broadcasting ones, none at all
POP_RATE = gettext_noop("pop rate: messages handed out per second, acknowledged or not")
NO_RATE = gettext_noop("the broker reported no rate")
BROADCAST_RATES_UNREAD = gettext_noop("broadcasting: the clients' own rates could not all be read")
BROADCAST_RATES_SUM = gettext_noop("broadcasting: the sum of the rates the clients report")
# a queue without a committed offset
BROADCAST_SLOWEST = gettext_noop("broadcasting: the slowest client's position (see offsets per client)")
NEVER_CONSUMED = gettext_noop("no committed offset: nobody has consumed this queue yet")
# POP messages in flight, unknown
IN_FLIGHT_UNKNOWN = gettext_noop("unknown: %(why)s")
POPS_UNREPORTED = gettext_noop("not every client reported its pops")
NO_METRICS_FIGURE = gettext_noop("the brokers' metrics have no figure for this group")
METRICS_NOT_ENABLED = gettext_noop("broker metrics not enabled for this cluster (its broker metrics URLs)")
METRICS_NOT_READ = gettext_noop("broker metrics not read: %(errors)s")

NOTE_FORMATS = (
    POP_LAG_SECONDS, POP_RATE, NO_RATE, BROADCAST_RATES_UNREAD, BROADCAST_RATES_SUM, BROADCAST_SLOWEST,
    NEVER_CONSUMED, IN_FLIGHT_UNKNOWN, POPS_UNREPORTED, NO_METRICS_FIGURE, METRICS_NOT_ENABLED, METRICS_NOT_READ,
)  # fmt: skip
register_formats(*NOTE_FORMATS)
