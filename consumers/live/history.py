"""History of polled snapshots in Parquet, for the lag charts and the nightly PySpark jobs,
whole whichever worker on whichever host polled: HistoryStore, over its parts

- history_rows.py: the tables a poll gives, their schemas (shared with the statistics job);
- history_state.py: the last known offsets of every queue, in Redis, and the steps from them;
- history_files.py: HISTORY_URL, the layout and names of the files, which of them to read;
- history_compaction.py: merging small files, retention.

A poll is recorded (its queue rows stepped from the shared state, which is committed), then
written as one immutable file per table and date named by the poll id, so writing it again
(a retry, the host's spool draining) writes the same file. Readers choose the files to read so
that each poll is read once, and the statistics run hands the job that choice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from . import history_compaction
from .history_files import cover, list_partitions, open_location, poll_name, spark_url, write_file
from .history_rows import (
    GROUP_STATS,
    QUEUE_OFFSETS,
    SCHEMAS,
    TIMESTAMP,
    TOPIC_POLLS,
    conform,
    dates_of,
    dedupe_rows,
    history_tables,
    row_filter,
    sort_rows,
    topic_polls,
)  # fmt: skip
from .history_schema import SCHEMA_VERSION
from .history_state import MemoryOffsets, RedisOffsets, record_poll, with_steps

__all__ = [
    "GROUP_STATS", "QUEUE_OFFSETS", "SCHEMA_VERSION", "SCHEMAS", "TIMESTAMP", "TOPIC_POLLS", "HistoryStore",
    "MemoryOffsets", "RedisOffsets", "StatsInputs", "conform", "history_tables", "topic_polls", "with_steps",
]  # fmt: skip

# How long a compacted file's inputs stay after it: longer than a statistics run reads for
DEFAULT_GRACE = 2 * 3600
READ_ATTEMPTS = 3


@dataclass(frozen=True)
class StatsInputs:
    """What a statistics run reads: the history's root and, per table, the files (as Spark
    names them) that hold each poll of the days asked for; `deduplicated` when no poll is in
    two of them; `polled` the (cluster, date) pairs with group rows."""

    root: str
    files: dict[str, list[str]]
    deduplicated: bool
    polled: set[tuple[str, str]]


class HistoryStore:
    def __init__(self, url: str | Path, *, state, grace: float = DEFAULT_GRACE):
        """`url`: HISTORY_URL (history_files.py); `state`: the shared last known offsets
        (RedisOffsets; MemoryOffsets in one process); `grace`: see history_compaction.py."""
        self.url, self.state, self.grace = str(url), state, grace

    @property
    def spark_url(self) -> str:
        return spark_url(self.url)

    # writing

    def append(self, cluster: str, tables: dict[str, pa.Table], *, poll_id: int | None = None) -> None:
        """Record and write one poll's rows (or several polls', in time order: backfills and
        tests); `poll_id` defaults to the rows' first time (ms). A poll recorded before is
        not written again."""
        if poll_id is None:
            poll_id = min((pc.min(t["ts"].cast(pa.int64())).as_py() for t in tables.values() if t.num_rows), default=0)
        recorded = self.record(cluster, poll_id, tables)
        if recorded is not None:
            self.write(cluster, poll_id, recorded)
            self.confirm(cluster, poll_id, recorded)

    def record(self, cluster: str, poll_id: int, tables: dict[str, pa.Table]) -> dict[str, pa.Table] | None:
        """The poll's rows as they are to be written, the shared state committed (history_state)."""
        return record_poll(self.state, cluster, poll_id, tables, lambda: self._has_history(cluster))

    def confirm(self, cluster: str, poll_id: int, recorded: dict[str, pa.Table]) -> None:
        """A recorded poll's rows are safe (written, or spooled): the next poll may step from it.
        A poll without queue rows committed no state, so there is nothing to confirm."""
        if "queue_offsets" in recorded:
            self.state.confirm(cluster, poll_id)

    def write(self, cluster: str, poll_id: int, tables: dict[str, pa.Table]) -> None:
        """Write a recorded poll's rows: a file per table and date, named by the poll id."""
        filesystem, base = open_location(self.url)
        # the group rows last: their topic_polls marker claims the topic rows are there
        for name in sorted(tables, key=lambda n: n == "group_stats"):
            for date, rows in dates_of(conform(tables[name], SCHEMAS[name])).items():
                path = f"{base}/{name}/cluster={cluster}/date={date}/{poll_name(poll_id)}"
                write_file(filesystem, path, sort_rows(rows), frozenset([str(poll_id)]))

    def _has_history(self, cluster: str) -> bool:
        filesystem, base = open_location(self.url)
        selector = pafs.FileSelector(f"{base}/queue_offsets/cluster={cluster}", allow_not_found=True)
        try:
            return bool(filesystem.get_file_info(selector))
        except OSError:
            return True  # unknown: the answer that writes no step it cannot vouch for

    # reading

    def read(
        self,
        name: str,
        cluster: str,
        *,
        group: str | None = None,
        since: dt.datetime | None = None,
        groups: Collection[str] | None = None,
    ) -> pa.Table:
        """A table's rows of one cluster (optionally one group, or several in one read, since
        a time), each poll once."""
        schema = SCHEMAS[name]
        group = sorted(groups) if groups is not None else group
        filesystem, base = open_location(self.url)
        first = since.date().isoformat() if since is not None else None
        for attempt in range(READ_ATTEMPTS):
            paths, shared = [], False
            for _, listed in sorted(list_partitions(filesystem, f"{base}/{name}/cluster={cluster}", first).items()):
                chosen = cover(filesystem, list(listed.mtimes))
                paths, shared = paths + chosen.chosen, shared or chosen.shared
            if not paths:
                return schema.empty_table()
            try:
                dataset = ds.dataset(paths, filesystem=filesystem, schema=schema, format="parquet")
                table = dataset.to_table(filter=row_filter(group, since))
                break
            except FileNotFoundError:
                # a compaction deleted a file after we listed it; the file holding its polls
                # was there before the grace began, so listing again finds it
                if attempt == READ_ATTEMPTS - 1:
                    raise
        return sort_rows(dedupe_rows(table, name) if shared else table)

    def files(self, name: str, cluster: str) -> list[str]:
        """Every file of a table of one cluster, those waiting to be deleted too."""
        filesystem, base = open_location(self.url)
        listed = list_partitions(filesystem, f"{base}/{name}/cluster={cluster}")
        return [path for date in sorted(listed) for path in sorted(listed[date].mtimes)]

    def stats_inputs(self, clusters: list[str], days: list[dt.date]) -> StatsInputs:
        filesystem, base = open_location(self.url)
        root, wanted = self.spark_url, {d.isoformat() for d in days}
        files: dict[str, list[str]] = {}
        shared, polled = False, set()
        for name in SCHEMAS:
            files[name] = []
            for cluster in clusters:
                listed = list_partitions(filesystem, f"{base}/{name}/cluster={cluster}", min(wanted, default=None))
                for date in sorted(set(listed) & wanted):
                    chosen = cover(filesystem, list(listed[date].mtimes))
                    files[name] += [root + path[len(base) :] for path in chosen.chosen]
                    shared = shared or chosen.shared
                    if name == "group_stats" and chosen.chosen:
                        polled.add((cluster, date))
        return StatsInputs(root, files, not shared, polled)

    # upkeep

    def compact(self, cluster: str, *, today: dt.date | None = None, grace: float | None = None, **limits) -> int:
        """Merge small files (history_compaction.py); returns how many were merged."""
        filesystem, base = open_location(self.url)
        today = today or dt.datetime.now(dt.UTC).date()
        grace = self.grace if grace is None else grace
        return history_compaction.compact(filesystem, base, cluster, grace=grace, today=today, **limits)

    def prune(self, retention_days: int, *, today: dt.date | None = None) -> list[str]:
        """Delete the date partitions older than the retention; returns their paths."""
        filesystem, base = open_location(self.url)
        today = today or dt.datetime.now(dt.UTC).date()
        return history_compaction.prune(filesystem, base, retention_days, today=today)
