"""History of polled snapshots in Parquet, for the lag charts and the nightly PySpark jobs.

Layout under HISTORY_DIR (hive-style partitions, readable by pyarrow.dataset and Spark):

    queue_offsets/cluster=<name>/date=<YYYY-MM-DD>/part-<first ts>-<id>.parquet
    group_stats/cluster=<name>/date=<YYYY-MM-DD>/part-<first ts>-<id>.parquet
    topic_polls/cluster=<name>/date=<YYYY-MM-DD>/part-<first ts>-<id>.parquet
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
import shutil
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from .documents import GroupDocument
from .history_schema import ADDED, SCHEMA_VERSION, arrow_schema

__all__ = [
    "GROUP_STATS", "QUEUE_OFFSETS", "SCHEMA_VERSION", "SCHEMAS", "TIMESTAMP", "TOPIC_POLLS", "HistoryStore", "conform",
    "history_tables", "topic_polls", "with_steps",
]  # fmt: skip

TIMESTAMP = pa.timestamp("ms", tz="UTC")

# The columns, with what each holds, are in history_schema.py, shared with the statistics job.
QUEUE_OFFSETS = arrow_schema("queue_offsets")  # one row per queue per poll
GROUP_STATS = arrow_schema("group_stats")  # one row per group per poll
TOPIC_POLLS = arrow_schema("topic_polls")  # one row per group, topic and poll: sums of the queue rows

SCHEMAS = {"queue_offsets": QUEUE_OFFSETS, "group_stats": GROUP_STATS, "topic_polls": TOPIC_POLLS}


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
            ("topic_polls", True),  # HistoryStore.append writes them from the queue rows
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
                ("previous_ts", None),  # the steps: HistoryStore.append computes them
                ("consumed_step", None),
                ("produced_step", None),
                ("steps", None),
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
        """Stage one poll's rows (polls in time order); flush the cluster if enough has gathered.

        Each queue row gets its steps since that queue's previous row (see with_steps), from the
        cluster's state file beside the staging files, which also names the recent polls written,
        and the topic_polls rows are summed from them.
        A poll given again (spooled after its write had in fact gone through, then replayed) is
        not written twice, so the history holds no poll in two places: the state is committed
        only after the rows are staged, and a poll it names is skipped."""
        with self._locked(cluster):
            tables = {name: conform(t, SCHEMAS[name]) for name, t in tables.items() if t.num_rows}
            state = self._read_state(cluster)
            newest = max((pc.max(t["ts"]).value for t in tables.values()), default=None)
            written = _written(state)
            if newest is not None and newest not in written:
                if "queue_offsets" in tables:
                    tables["queue_offsets"], state = with_steps(tables["queue_offsets"], state)
                    tables["topic_polls"] = topic_polls(tables["queue_offsets"])
                pending = self._write_state(cluster, _with_written(state, written, newest), commit=False)
                # the group rows last: their topic_polls marker claims the topic rows are there
                for name, table in sorted(tables.items(), key=lambda item: item[0] == "group_stats"):
                    self._stage(cluster, name, table)
                os.replace(pending, self._state_path(cluster))
            if self._flush_due(cluster):
                self._flush(cluster)

    def flush(self, cluster: str) -> int:
        with self._locked(cluster):
            return self._flush(cluster)

    def snapshot(self, clusters: list[str], dates: list[dt.date], target: Path) -> int:
        """Hard links to every flushed file of these clusters and dates under `target` (a folder
        inside the store: links need the same file system), in the store's layout, taken under
        each cluster's lock right after a flush. A reader of the snapshot sees a fixed set of
        files with no poll in two of them, whatever compaction does meanwhile (it unlinks the
        parts it merged; the links keep them). Returns the number of files linked."""
        target.mkdir(parents=True, exist_ok=True)
        linked = 0
        for cluster in clusters:
            with self._locked(cluster):
                self._flush(cluster)
                for name in SCHEMAS:
                    for date in dates:
                        relative = Path(name) / f"cluster={cluster}" / f"date={date.isoformat()}"
                        parts = sorted((self.root / relative).glob("*.parquet"))
                        if parts:
                            (target / relative).mkdir(parents=True, exist_ok=True)
                        for part in parts:
                            os.link(part, target / relative / part.name)
                            linked += 1
        return linked

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
                    table = ds.dataset([str(p) for p in parts], schema=SCHEMAS[name], format="parquet").to_table()
                    self._write_parquet(partition, _sorted(table))
                    for part in parts:
                        part.unlink()
                    merged += len(parts)
        return merged

    def prune(self, retention_days: int, *, today: dt.date | None = None) -> list[Path]:
        """Delete date partitions older than the retention."""
        cutoff = (today or dt.datetime.now(dt.UTC).date()) - dt.timedelta(days=retention_days)
        removed = []
        # snapshots a statistics run did not remove (its worker died): a day is longer than any run
        for snapshot in (self.root / "_snapshots").glob("*"):
            if time.time() - snapshot.stat().st_mtime > 86400:
                shutil.rmtree(snapshot, ignore_errors=True)
                removed.append(snapshot)
        for partition in self.root.glob("*/cluster=*/date=*"):
            if dt.date.fromisoformat(partition.name.removeprefix("date=")) < cutoff:
                for part in partition.iterdir():
                    part.unlink()
                partition.rmdir()
                removed.append(partition)
        return removed

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
        """Flushed and staged rows of a table for one cluster (optionally one group, or several
        in one read, since a time)."""
        schema = SCHEMAS[name]
        if groups is not None:
            group = sorted(groups)
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
                table = conform(table, schema)
                tables.append(table.filter(_filter(group, since)) if group is not None or since else table)
        if not tables:
            return schema.empty_table()
        # a compaction that ran while we listed the files can show a poll twice
        return _sorted(_dedupe(pa.concat_tables(tables)))

    def files(self, name: str, cluster: str) -> list[Path]:
        return sorted((self.root / name / f"cluster={cluster}").glob("date=*/*.parquet"))

    # internals

    def _state_path(self, cluster: str) -> Path:
        return self.root / "_state" / f"queue_offsets-{cluster}.arrow"

    def _read_state(self, cluster: str) -> pa.Table | None:
        return _read_ipc(self._state_path(cluster))

    def _write_state(self, cluster: str, state: pa.Table, *, commit: bool = True) -> Path:
        """Write the state beside its place; moved there now, or by the caller (the path given)."""
        path = self._state_path(cluster)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, state.schema) as writer:
            writer.write_table(state)
        if commit:
            os.replace(tmp, path)
        return tmp

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
            tables = [conform(t, schema) for t in (_read_ipc(p) for p in staged) if t is not None]
            if not tables:
                continue
            table = pa.concat_tables(tables)
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


STATE_KEY = ["group", "topic", "broker", "queue_id"]
STATE_SCHEMA = pa.schema(
    [("group", pa.string()), ("topic", pa.string()), ("broker", pa.string()), ("queue_id", pa.int32()),
     ("ts", TIMESTAMP), ("consumer_offset", pa.int64()), ("broker_offset", pa.int64())]
)  # fmt: skip


def with_steps(table: pa.Table, state: pa.Table | None) -> tuple[pa.Table, pa.Table]:
    """Queue rows with what changed since each queue's previous row, and the state for the next
    call: per queue the last row's time and the last known (non-null) offsets.

    The same definitions as the statistics job's window over a queue's rows (transforms.py):
    previous_ts is the previous row's ts; consumed_step / produced_step are the differences to
    the previous *known* offsets (a null offset is skipped, so the next known one carries the
    whole move). One difference, on purpose: the writer remembers a queue across any gap, where
    the job's window saw only the day before, so a move across a gap of days lands on the day
    it was observed instead of being lost. Rows must come in time order across calls."""
    state = STATE_SCHEMA.empty_table() if state is None else state
    if not table.num_rows:
        return table, state
    if pc.min(table["ts"]) == pc.max(table["ts"]):
        return _steps_of_one_poll(table, state)  # the poller's case, and the fast one
    return _steps_of_many_polls(table, state)


def _steps_of_one_poll(table: pa.Table, state: pa.Table) -> tuple[pa.Table, pa.Table]:
    """One poll: each queue at most once, so a join with the state is enough."""
    keyed = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    previous = state.rename_columns([*STATE_KEY, "_prev_ts", "_prev_consumer", "_prev_broker"])
    joined = keyed.join(previous, STATE_KEY, join_type="left outer").sort_by("_row")
    table = _set_steps(
        table,
        joined["_prev_ts"],
        pc.subtract(joined["consumer_offset"], joined["_prev_consumer"]),
        pc.subtract(joined["broker_offset"], joined["_prev_broker"]),
    )
    # this poll's queues (a null offset keeps the last known one), and every other as it was
    seen = pa.table({
        **{k: joined[k] for k in STATE_KEY},
        "ts": joined["ts"],
        "consumer_offset": pc.coalesce(joined["consumer_offset"], joined["_prev_consumer"]),
        "broker_offset": pc.coalesce(joined["broker_offset"], joined["_prev_broker"]),
    }, schema=STATE_SCHEMA)  # fmt: skip
    unseen = state.join(table.select(STATE_KEY), STATE_KEY, join_type="left anti")
    return table, pa.concat_tables([seen, unseen.select(STATE_SCHEMA.names).cast(STATE_SCHEMA)])


def _steps_of_many_polls(table: pa.Table, state: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Several polls at once (tests, backfills): each queue's rows in time order after its state."""
    import pandas as pd

    nullable = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get
    rows = table.select(STATE_SCHEMA.names).cast(STATE_SCHEMA).to_pandas(types_mapper=nullable)
    rows["_row"] = range(len(rows))
    prior = state.to_pandas(types_mapper=nullable)
    prior["_row"] = -1  # before this table's rows of the same queue
    both = pd.concat([prior, rows], ignore_index=True).sort_values([*STATE_KEY, "ts", "_row"], kind="stable")
    same_queue = both.groupby(STATE_KEY, sort=False)
    both["_prev_ts"] = same_queue["ts"].shift()
    for column in ("consumer_offset", "broker_offset"):
        both[f"_last_{column}"] = same_queue[column].ffill()
    same_queue = both.groupby(STATE_KEY, sort=False)
    for column in ("consumer_offset", "broker_offset"):
        both[f"_prev_{column}"] = same_queue[f"_last_{column}"].shift()
    ours = both[both["_row"] >= 0].sort_values("_row")
    table = _set_steps(
        table,
        pa.array(ours["_prev_ts"], TIMESTAMP),
        pa.array(ours["consumer_offset"] - ours["_prev_consumer_offset"], pa.int64()),
        pa.array(ours["broker_offset"] - ours["_prev_broker_offset"], pa.int64()),
    )
    last = (
        both.groupby(STATE_KEY, sort=False)
        .agg(ts=("ts", "last"), consumer_offset=("consumer_offset", "last"), broker_offset=("broker_offset", "last"))
        .reset_index()
    )  # "last" skips nulls: the last known offsets
    return table, pa.Table.from_pandas(last[STATE_SCHEMA.names], schema=STATE_SCHEMA, preserve_index=False)


def _set_steps(table: pa.Table, previous_ts, consumed, produced) -> pa.Table:
    columns = {
        "previous_ts": previous_ts,
        "consumed_step": consumed,
        "produced_step": produced,
        "steps": pa.array([True] * table.num_rows, pa.bool_()),
    }
    for name, values in columns.items():
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, values.cast(table.schema.field(name).type))
    return table


def topic_polls(queues: pa.Table) -> pa.Table:
    """Stepped queue rows (with_steps) summed per poll, group and topic, with the statistics
    job's definitions (transforms.queue_steps and topic_poll_sums: the job's tests compare both
    ways on the same history). A sum over no known value is null, as Spark's."""
    lag, seconds = queues["lag"], queues["lag_seconds"]
    lagging = pc.greater(lag, 0)
    unknown = pc.or_kleene(pc.is_null(lag), pc.and_kleene(lagging, pc.is_null(seconds)))

    def forward(step):  # a positive step, 0 for a backward one, null when unknown
        return pc.if_else(pc.greater(step, 0), step, pa.scalar(0, pa.int64()))

    frame = pa.table(
        {
            "ts": queues["ts"],
            "group": queues["group"],
            "topic": queues["topic"],
            "retry": queues["retry"],
            "one": pa.repeat(pa.scalar(1, pa.int32()), queues.num_rows),
            "unknown": pc.cast(unknown, pa.int32()),
            "lag": lag,
            "lagging_seconds": pc.if_else(lagging, seconds, pa.scalar(None, pa.float64())),
            "consumed": forward(queues["consumed_step"]),
            "produced": forward(queues["produced_step"]),
            "reset": pc.cast(pc.fill_null(pc.less(queues["consumed_step"], 0), False), pa.int32()),
        }
    )
    summed = frame.group_by(["ts", "group", "topic", "retry"], use_threads=False).aggregate(
        [("one", "sum"), ("unknown", "sum"), ("lag", "sum"), ("lagging_seconds", "max"), ("consumed", "sum"),
         ("produced", "sum"), ("reset", "sum")]
    )  # fmt: skip
    columns = {
        "queues": "one_sum", "unknown_queues": "unknown_sum", "lag": "lag_sum",
        "worst_lag_seconds": "lagging_seconds_max", "consumed": "consumed_sum", "produced": "produced_sum",
        "resets": "reset_sum",
    }  # fmt: skip
    arrays = [summed[columns.get(field.name, field.name)].cast(field.type) for field in TOPIC_POLLS]
    return _sorted(pa.Table.from_arrays(arrays, schema=TOPIC_POLLS))


# the polls a state remembers having written: a replay comes right after its failure, so a
# short memory is enough (an exact match, not "not newer": a clock set back must not drop polls)
WRITTEN_MEMORY = 64


def _written(state: pa.Table | None) -> set[int]:
    """The recent polls written (epoch ms), from the state's metadata."""
    value = (state.schema.metadata or {}).get(b"written", b"") if state is not None else b""
    return {int(ms) for ms in value.split(b",") if ms}


def _with_written(state: pa.Table | None, written: set[int], ts_ms: int) -> pa.Table:
    state = STATE_SCHEMA.empty_table() if state is None else state
    recent = sorted(written | {ts_ms})[-WRITTEN_MEMORY:]
    return state.replace_schema_metadata({"written": ",".join(map(str, recent))})


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A table written with an older schema, with the columns added since as nulls; any other
    missing column is refused (ValueError)."""
    if table.schema.names == schema.names:
        return table.cast(schema)
    name = next(n for n, s in SCHEMAS.items() if s is schema)
    missing = [c for c in schema.names if c not in table.column_names and c not in ADDED[name]]
    if missing:
        raise ValueError(f"rows for {name} lack {', '.join(missing)}")
    columns = [table[name] if name in table.column_names else pa.nulls(table.num_rows, field.type)
               for name, field in zip(schema.names, schema, strict=True)]  # fmt: skip
    return pa.Table.from_arrays(columns, schema=schema)


def _sorted(table: pa.Table) -> pa.Table:
    keys = [k for k in ("group", "topic", "broker", "queue_id") if k in table.column_names]
    return table.sort_by([(k, "ascending") for k in (*keys, "ts")])


def _filter(group: str | list[str] | None, since: dt.datetime | None):
    expression = None
    if isinstance(group, list):
        expression = pc.field("group").isin(group)
    elif group is not None:
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
