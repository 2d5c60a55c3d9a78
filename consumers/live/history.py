"""History of polled snapshots in Parquet, for the lag charts and the nightly PySpark jobs.

Layout under HISTORY_DIR (hive-style partitions, readable by pyarrow.dataset and Spark):

    queue_offsets/cluster=<name>/date=<YYYY-MM-DD>/part-<first ts>-<id>.parquet
    group_stats/cluster=<name>/date=<YYYY-MM-DD>/part-<first ts>-<id>.parquet
    _staging/<table>/cluster=<name>/<ts>-<rows>-<id>.arrow   (not yet flushed, Arrow IPC)

Each poll appends its rows to staging; once a cluster has `flush_rows` staged rows or the
oldest staged file is `flush_seconds` old (HISTORY_FLUSH_* settings), they are written as
one Parquet file per date, sorted by group then time so a reader of one group skips most row groups. `compact` merges
the parts of a date, `prune` drops dates past the retention. Readers see flushed and staged
rows, and drop the duplicates a concurrent compaction can briefly show.

The schemas are defined once, in history_schema.py, which the statistics job
(consumers/stats/job.py) reads the history with too. They, and `history_tables` that fills
them from a poll's documents, are a contract with that job: add columns at the end, never
change or remove one, and bump SCHEMA_VERSION when adding.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from .documents import GroupDocument
from .history_schema import SCHEMA_VERSION, arrow_schema

__all__ = ["GROUP_STATS", "QUEUE_OFFSETS", "SCHEMA_VERSION", "SCHEMAS", "TIMESTAMP", "HistoryStore", "history_tables"]

TIMESTAMP = pa.timestamp("ms", tz="UTC")

# The columns, with what each holds, are in history_schema.py, shared with the statistics job.
QUEUE_OFFSETS = arrow_schema("queue_offsets")  # one row per queue per poll
GROUP_STATS = arrow_schema("group_stats")  # one row per group per poll

SCHEMAS = {"queue_offsets": QUEUE_OFFSETS, "group_stats": GROUP_STATS}


def history_tables(docs: Iterable[GroupDocument]) -> dict[str, pa.Table]:
    """One poll's rows: fresh data only, never carried-over values or queues never committed."""
    queue_rows: dict[str, list] = {name: [] for name in QUEUE_OFFSETS.names}
    group_rows: dict[str, list] = {name: [] for name in GROUP_STATS.names}
    for doc in docs:
        if doc.stale or doc.as_of is None:
            continue
        ts = int(doc.as_of * 1000)
        for name, value in (
            ("ts", ts),
            ("group", doc.group),
            ("online", doc.online),
            ("clients", doc.clients),
            ("lag", doc.lag),
            ("retry_lag", doc.retry_lag),
            ("lag_seconds_max", doc.lag_seconds),
            ("consume_tps", doc.consume_tps),
            ("dlq_count", doc.dlq_count),
            ("health", (doc.health or {}).get("state")),
            ("complete", not doc.problems),
        ):
            group_rows[name].append(value)
        for q in doc.queues:
            if q.stale_reason or q.consumer is None:
                continue
            for name, value in (
                ("ts", ts),
                ("group", doc.group),
                ("topic", q.topic),
                ("broker", q.broker),
                ("queue_id", q.queue_id),
                ("retry", q.retry),
                ("broker_offset", q.max),
                ("consumer_offset", q.consumer),
                ("min_offset", q.min),
                ("lag", q.lag),
                ("lag_seconds", q.lag_seconds),
                ("last_consume_ms", q.last_consume_ms),
                ("client_id", q.clients[0] if q.clients else None),
            ):
                queue_rows[name].append(value)
    return {
        "queue_offsets": pa.Table.from_pydict(queue_rows, schema=QUEUE_OFFSETS),
        "group_stats": pa.Table.from_pydict(group_rows, schema=GROUP_STATS),
    }


class HistoryStore:
    def __init__(self, root: Path, *, flush_rows: int, flush_seconds: float):
        self.root = Path(root)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds

    # writing

    def append(self, cluster: str, tables: dict[str, pa.Table]) -> None:
        """Stage one poll's rows; flush the cluster if enough has gathered."""
        with self._locked(cluster):
            for name, table in tables.items():
                if table.num_rows:
                    self._stage(cluster, name, table.cast(SCHEMAS[name]))
            if self._flush_due(cluster):
                self._flush(cluster)

    def flush(self, cluster: str) -> int:
        with self._locked(cluster):
            return self._flush(cluster)

    def compact(self, cluster: str, *, min_files: int = 4) -> int:
        """Merge each date partition holding at least `min_files` parts into one file."""
        merged = 0
        with self._locked(cluster):
            for name in SCHEMAS:
                base = self.root / name / f"cluster={cluster}"
                for partition in sorted(base.glob("date=*")) if base.exists() else []:
                    parts = sorted(partition.glob("*.parquet"))
                    if len(parts) < min_files:
                        continue
                    table = pa.concat_tables(pq.read_table(p, schema=SCHEMAS[name]) for p in parts)
                    self._write_parquet(partition, _sorted(table))
                    for part in parts:
                        part.unlink()
                    merged += len(parts)
        return merged

    def prune(self, retention_days: int, *, today: dt.date | None = None) -> list[Path]:
        """Delete date partitions older than the retention."""
        cutoff = (today or dt.datetime.now(dt.UTC).date()) - dt.timedelta(days=retention_days)
        removed = []
        for partition in self.root.glob("*/cluster=*/date=*"):
            if dt.date.fromisoformat(partition.name.removeprefix("date=")) < cutoff:
                for part in partition.iterdir():
                    part.unlink()
                partition.rmdir()
                removed.append(partition)
        return removed

    # reading

    def read(self, name: str, cluster: str, *, group: str | None = None, since: dt.datetime | None = None) -> pa.Table:
        """Flushed and staged rows of a table for one cluster (optionally one group, since a time)."""
        schema = SCHEMAS[name]
        tables = []
        base = self.root / name / f"cluster={cluster}"
        if base.exists():
            files = [
                str(p)
                for p in sorted(base.glob("date=*/*.parquet"))
                if since is None or p.parent.name.removeprefix("date=") >= since.date().isoformat()
            ]
            if files:
                dataset = ds.dataset(files, schema=schema, format="parquet")
                tables.append(dataset.to_table(filter=_filter(group, since)))
        for path in sorted(self._staging_dir(cluster, name).glob("*.arrow")):
            table = _read_ipc(path)
            if table is not None:
                tables.append(table.filter(_filter(group, since)) if group or since else table)
        if not tables:
            return schema.empty_table()
        # a compaction that ran while we listed the files can show a poll twice
        return _sorted(_dedupe(pa.concat_tables(tables)))

    def files(self, name: str, cluster: str) -> list[Path]:
        return sorted((self.root / name / f"cluster={cluster}").glob("date=*/*.parquet"))

    # internals

    def _staging_dir(self, cluster: str, name: str) -> Path:
        return self.root / "_staging" / name / f"cluster={cluster}"

    def _stage(self, cluster: str, name: str, table: pa.Table) -> None:
        directory = self._staging_dir(cluster, name)
        directory.mkdir(parents=True, exist_ok=True)
        # the name carries the time and row count, so deciding to flush reads no file
        path = directory / f"{int(time.time() * 1000):013d}-{table.num_rows}-{uuid.uuid4().hex[:8]}.arrow"
        tmp = path.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, path)  # readers never see a half-written file

    def _flush_due(self, cluster: str) -> bool:
        staged = [p.name.split("-") for name in SCHEMAS for p in self._staging_dir(cluster, name).glob("*.arrow")]
        if not staged:
            return False
        oldest = min(int(parts[0]) for parts in staged) / 1000
        rows = sum(int(parts[1]) for parts in staged)
        return time.time() - oldest >= self.flush_seconds or rows >= self.flush_rows

    def _flush(self, cluster: str) -> int:
        written = 0
        for name, schema in SCHEMAS.items():
            staged = sorted(self._staging_dir(cluster, name).glob("*.arrow"))
            tables = [t for t in (_read_ipc(p) for p in staged) if t is not None]
            if not tables:
                continue
            table = pa.concat_tables(tables).cast(schema)
            dates = pc.strftime(table["ts"], format="%Y-%m-%d")
            for date in pc.unique(dates).to_pylist():
                part = table.filter(pc.equal(dates, date))
                self._write_parquet(self.root / name / f"cluster={cluster}" / f"date={date}", _sorted(part))
                written += 1
            for path in staged:
                path.unlink()
        return written

    def _write_parquet(self, partition: Path, table: pa.Table) -> Path:
        partition.mkdir(parents=True, exist_ok=True)
        first = table["ts"][0].value if table.num_rows else int(time.time() * 1000)
        path = partition / f"part-{first:013d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = partition / f".{path.name}.tmp"
        pq.write_table(table, tmp, compression="zstd", row_group_size=64 * 1024)
        os.replace(tmp, path)
        return path

    @contextlib.contextmanager
    def _locked(self, cluster: str) -> Iterator[None]:
        # One writer per cluster at a time, across processes (poll tasks, compaction).
        lock_dir = self.root / "_locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        with open(lock_dir / f"{cluster}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


def _sorted(table: pa.Table) -> pa.Table:
    keys = [("group", "ascending"), ("ts", "ascending")]
    if "topic" in table.column_names:
        keys[1:1] = [("topic", "ascending"), ("broker", "ascending"), ("queue_id", "ascending")]
    return table.sort_by(keys)


def _filter(group: str | None, since: dt.datetime | None):
    expression = None
    if group is not None:
        expression = pc.field("group") == group
    if since is not None:
        after = pc.field("ts") >= pa.scalar(since, type=TIMESTAMP)
        expression = after if expression is None else expression & after
    return expression


def _read_ipc(path: Path) -> pa.Table | None:
    try:
        with pa.memory_map(str(path)) as source:
            return ipc.open_file(source).read_all()
    except (FileNotFoundError, pa.ArrowInvalid):
        return None  # flushed (deleted) while we listed it


def _dedupe(table: pa.Table) -> pa.Table:
    """Drop repeated rows of the same poll (same key columns), keeping the first."""
    keys = [c for c in ("group", "topic", "broker", "queue_id", "ts") if c in table.column_names]
    seen: set[tuple] = set()
    keep = []
    for index, key in enumerate(zip(*(table[c].to_pylist() for c in keys), strict=True)):
        if key not in seen:
            seen.add(key)
            keep.append(index)
    return table if len(keep) == table.num_rows else table.take(pa.array(keep, type=pa.int64()))
