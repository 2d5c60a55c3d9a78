"""A split poll's documents and history rows on their way to being published.

Each part (parts.py) writes its groups' stored documents into the poll's staging hash as soon as
it has judged them, and makes its groups' history rows itself. The process that publishes the
poll then renames the staging hash to the detail hash in its transaction (snapshots.write_poll),
and appends the parts' rows to its own: it never decodes nor encodes the other parts' documents.
At 50,000 groups that was about 4 s of every poll in that one process, and most of its memory.

What it keeps of a staged group is its light form: the summary (what the index, the alerts and
the meta need) and its problems (whether it is complete), without the queues.

    rmqc:<id>:detail-next:<poll id>   hash: group -> stored document (as the detail hash)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from redis.exceptions import WatchError

from . import window
from .documents import GroupDocument
from .health import Sample
from .window import key as cluster_key

KEEP_SECONDS = 600  # a staging hash no poll published (its process died) goes after this long


def key(cluster_id: int, poll_id: str) -> str:
    return cluster_key(cluster_id, f"detail-next:{poll_id}")


def stage(pipe, name: str, documents: dict[str, GroupDocument]) -> None:
    """These documents into the poll's staging hash `name` (in `pipe`)."""
    if not documents:
        return
    pipe.hset(name, mapping={g: d.encode() for g, d in documents.items()})
    pipe.expire(name, KEEP_SECONDS)


def stage_open(
    redis, cluster_id: int, poll_id: str, documents: dict[str, GroupDocument], samples: dict[str, Sample]
) -> bool:
    """A part's documents into the poll's staging hash, and its samples into the poll's window
    entry (window.py), unless the poll has closed its staging (`close`: it publishes without
    this part, its groups carried over); False then, and nothing written. Checked in the same
    transaction as the writes (WATCH), so no part's documents land between the groups the poll
    carries over and its rename (the detail hash never holds a fresher document than the index
    says), and a carried group has one sample of the poll in the window, not two."""
    closed = key(cluster_id, poll_id) + ":closed"
    with redis.pipeline() as pipe:
        try:
            pipe.watch(closed)
            if pipe.exists(closed):
                return False
            pipe.multi()
            stage(pipe, key(cluster_id, poll_id), documents)
            window.write_range(pipe, cluster_id, poll_id, samples)
            pipe.execute()
        except WatchError:
            return False
    return True


def close(redis, cluster_id: int, poll_id: str) -> None:
    """No part stages for this poll from now on (stage_open)."""
    redis.set(key(cluster_id, poll_id) + ":closed", 1, ex=KEEP_SECONDS)


def light(doc: GroupDocument) -> dict:
    """What the publishing process keeps of a staged group's document."""
    return {**doc.summary(), "problems": doc.problems}


@dataclass
class Staged:
    """A split poll's staged groups: the hash their documents are in, their names, and the parts'
    history rows (history_rows.history_tables of their documents), table by table."""

    key: str
    groups: set[str] = field(default_factory=set)
    history: dict[str, list[pa.Table]] = field(default_factory=dict)

    def add_history(self, tables: dict[str, pa.Table]) -> None:
        for name, table in tables.items():
            self.history.setdefault(name, []).append(table)

    def tables(self, own: dict[str, pa.Table]) -> dict[str, pa.Table]:
        """The poll's history tables: `own` (its groups not staged) with the parts' rows."""
        return {name: pa.concat_tables([table, *self.history.get(name, [])]) for name, table in own.items()}


def table_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from(raw: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(raw)).read_all()
