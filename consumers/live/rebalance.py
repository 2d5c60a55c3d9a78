"""When each queue of a group changed hands, from the history's per-queue rows (the holder of
every queue at every poll): the allocation timeline on the group page.

A change is a poll at which a queue's holder differs from its holder at the poll before:
another client, or none (released: the client left and nobody took it yet). Retry queues are
left out (every client of the group reads them). Between two polls several hand-overs can
happen; the history sees the last, so counts are lower bounds at the poll interval.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from .diagnostics import queue_label


@dataclass(frozen=True)
class Change:
    at: dt.datetime
    queue: str
    before: str | None  # None: nobody held it
    after: str | None


@dataclass
class Timeline:
    changes: list[Change]
    polls: int  # distinct polls seen
    clients: list[str]  # every client that held a queue, in order of first appearance

    def per_hour(self) -> list[tuple[dt.datetime, int]]:
        counts = Counter(c.at.replace(minute=0, second=0, microsecond=0) for c in self.changes)
        return sorted(counts.items())


def timeline(rows: pa.Table, *, incomplete: set | frozenset = frozenset()) -> Timeline:
    """`rows`: the group's queue_offsets rows, any order. `incomplete`: times of polls that
    could not read the whole group (a client's queues unread look released): left out."""
    if incomplete:
        keep = [ts not in incomplete for ts in rows.column("ts").to_pylist()]
        rows = rows.filter(pa.array(keep, type=pa.bool_()))
    if rows.num_rows == 0:
        return Timeline([], 0, [])
    rows = rows.sort_by([("ts", "ascending")])
    columns = [rows.column(name).to_pylist() for name in ("ts", "topic", "broker", "queue_id", "retry", "client_id")]
    holder: dict[str, str | None] = {}
    changes, clients, polls = [], {}, set()
    for ts, topic, broker, queue_id, retry, client in zip(*columns, strict=True):
        polls.add(ts)
        if retry:
            continue
        label = queue_label(topic, broker, queue_id)
        if label in holder and holder[label] != client:
            changes.append(Change(ts, label, holder[label], client))
        holder[label] = client
        if client is not None:
            clients.setdefault(client, None)
    return Timeline(changes, len(polls), list(clients))
