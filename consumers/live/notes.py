"""The notes a poll writes beside a group's numbers (building.build_document): what a number
measures for POP and broadcasting groups, why one is unknown (a queue's lag in seconds:
lagtime.py; whether a client is online), why a queue is stale and why a lag total is incomplete.

In English, as the health evidence: written once into the group's document for every reader,
kept so by the API (`lag_seconds_measures`, `consume_tps_note`, `in_flight_note`, `clients_note`,
`lag_incomplete`, `stale_reason`, a queue's `lag_seconds_note` and `stale_reason`). A page shows
them in the reader's language, parsed back by these formats (consumers/languages/evidence.py)."""

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
# one of those errors, per broker (poll.py words it)
METRICS_URL_MISSING = gettext_noop("%(broker)s: no metrics URL, or the broker itself unreadable")

# a queue's lag in seconds, unknown (lagtime.py; building.py when the poll measured nothing)
LAG_NOT_MEASURED = gettext_noop("not measured")
LAG_OVER_BUDGET = gettext_noop("not measured yet (over the %(budget)s lookups a poll may make)")
LAG_MESSAGE_NOT_FOUND = gettext_noop("message not found")
LAG_MESSAGE_UNREAD = gettext_noop("could not read the message at offset %(offset)s: %(error)s")
LAG_NO_MESSAGE = gettext_noop("no message at offset %(offset)s (%(status)s)")
# and known, measured from another message than the consumer offset's (stored in lagtime's cache)
LAG_FROM_OLDEST = gettext_noop("from the oldest stored message; older ones expired")
# whether a client is online, unknown (building._clients_note); several are joined by "; "
CLIENTS_UNASKED = gettext_noop("this poll could not ask who is connected")
CLIENTS_NO_ANSWER = gettext_noop("no broker answered who is connected (%(error)s)")
CLIENTS_PROXY_UNREAD = gettext_noop(
    "proxy %(proxy)s could not be read (%(error)s); the group's gRPC clients may be there"
)
# a proxy in its restart grace: the problem as proxy_grace.hold words it (a group's problems
# list it), and the clients' note, "proxy <address> " and that problem
PROXY_RESTARTING = gettext_noop(
    "restarted %(seconds)s s ago: its gRPC clients are registering again (they are unknown, not stopped, "
    "for %(grace)s s after a restart)"
)
CLIENTS_PROXY_RESTARTED = gettext_noop(
    "proxy %(proxy)s restarted %(seconds)s s ago: its gRPC clients are registering again (they are unknown, "
    "not stopped, for %(grace)s s after a restart)"
)
# why a broker's queues are carried over, stale (building.py; brokers.describe words the same two)
BROKER_UNREADABLE = gettext_noop("broker unreadable: %(error)s")
BROKER_MISSING = gettext_noop("missing since %(since)s (not in the name server; last read %(read)s)")
# a lag total with stale queues: "incomplete: " and, per broker ("; "), its name and why
INCOMPLETE = gettext_noop("incomplete: %(brokers)s")
INCOMPLETE_NOT_READ = gettext_noop("%(broker)s not read")
INCOMPLETE_UNREADABLE = gettext_noop("%(broker)s broker unreadable: %(error)s")
INCOMPLETE_MISSING = gettext_noop("%(broker)s missing since %(since)s (not in the name server; last read %(read)s)")
# groups a poll that could not read every broker did not list, kept stale (publish._unlisted
# words it; each broker's part, "<broker>: <why>", is read by the two above)
NOT_LISTED = gettext_noop("not listed in this poll: %(brokers)s")
# a group of a split poll's part that was not read, carried over stale (parts.py), and why
PART_NOT_READ = gettext_noop("part %(part)s of %(parts)s of the poll was not read: %(why)s")
PART_LOST = gettext_noop("the worker reading it stopped (its claim lapsed)")
PART_LATE = gettext_noop("it did not finish within the poll's deadline")
PART_EXPIRED = gettext_noop("its result expired before the poll read it")

# a queue's lag counted for the group's tags (taglag.py), estimated or not counted
TAG_LAG_ESTIMATED = gettext_noop(
    "estimated from %(counted)s of %(units)s messages (the rest over the %(budget)s units a poll may read)"
)
TAG_LAG_OVER_BUDGET = gettext_noop("not counted yet (over the %(budget)s units a poll may read)")
TAG_LAG_UNREAD = gettext_noop("consume queue unreadable: %(error)s")
TAG_LAG_SQL = gettext_noop("SQL92 filter: not counted, the lag is every message")

NOTE_FORMATS = (
    POP_LAG_SECONDS, POP_RATE, NO_RATE, BROADCAST_RATES_UNREAD, BROADCAST_RATES_SUM, BROADCAST_SLOWEST,
    NEVER_CONSUMED, IN_FLIGHT_UNKNOWN, POPS_UNREPORTED, NO_METRICS_FIGURE, METRICS_NOT_ENABLED, METRICS_NOT_READ,
    METRICS_URL_MISSING,
    LAG_NOT_MEASURED, LAG_OVER_BUDGET, LAG_MESSAGE_NOT_FOUND, LAG_MESSAGE_UNREAD, LAG_NO_MESSAGE, LAG_FROM_OLDEST,
    CLIENTS_UNASKED, CLIENTS_NO_ANSWER, CLIENTS_PROXY_UNREAD, PROXY_RESTARTING, CLIENTS_PROXY_RESTARTED,
    BROKER_UNREADABLE, BROKER_MISSING, INCOMPLETE, INCOMPLETE_NOT_READ, INCOMPLETE_UNREADABLE, INCOMPLETE_MISSING,
    NOT_LISTED, PART_NOT_READ, PART_LOST, PART_LATE, PART_EXPIRED,
    TAG_LAG_ESTIMATED, TAG_LAG_OVER_BUDGET, TAG_LAG_UNREAD, TAG_LAG_SQL,
)  # fmt: skip
register_formats(*NOTE_FORMATS)
