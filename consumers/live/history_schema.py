"""The history's Parquet schema: the one definition of the contract between the poller that
writes the history (consumers/live/history_rows.py, as pyarrow schemas) and the statistics job that
reads it (consumers/stats/job.py, as Spark DDL).

Plain Python, no Django and no pyarrow at import: the job imports it in the spark-submit
driver, which puts the repository root on sys.path (job.py does when run as a file, and
stats/session.py's environment sets PYTHONPATH), so nothing needs shipping with --py-files.

Add columns at the end, never change or remove one, and bump SCHEMA_VERSION when adding.
"""

from __future__ import annotations

SCHEMA_VERSION = "3"

# Column types: "timestamp" is milliseconds, UTC.
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    # One row per queue per poll.
    "queue_offsets": (
        ("ts", "timestamp"),  # when the poll read this queue
        ("group", "string"),
        ("topic", "string"),  # %RETRY%<group> rows have retry = true
        ("broker", "string"),
        ("queue_id", "int32"),
        ("retry", "bool"),
        ("broker_offset", "int64"),  # max offset: the next offset to be written
        ("consumer_offset", "int64"),  # committed offset
        ("min_offset", "int64"),  # null when unknown
        ("lag", "int64"),  # broker_offset - consumer_offset
        ("lag_seconds", "float64"),  # poll time - store time of the first unconsumed message; null unknown
        ("last_consume_ms", "timestamp"),  # store time of the last consumed message; null: never
        ("client_id", "string"),  # holder of the queue; null: none or unknown
        # Schema 2: what changed since this queue's previous row, computed by the writer, which
        # holds that row (so the statistics job needs no per-queue window). Null in rows written
        # before schema 2: `steps` says whether the three below were computed.
        ("previous_ts", "timestamp"),  # the queue's previous row; null: none (its first)
        ("consumed_step", "int64"),  # consumer_offset - the previous known consumer offset; null: none known
        ("produced_step", "int64"),  # broker_offset - the previous known broker offset; null: none known
        ("steps", "bool"),  # true: the three columns above were computed by the writer
    ),
    # One row per group per poll.
    "group_stats": (
        ("ts", "timestamp"),
        ("group", "string"),
        ("online", "bool"),  # null: unknown
        ("clients", "int32"),
        ("lag", "int64"),  # subscribed topics, retry excluded; null: unknown
        ("retry_lag", "int64"),
        ("lag_seconds_max", "float64"),
        ("consume_tps", "float64"),
        ("dlq_count", "int64"),
        ("health", "string"),
        ("complete", "bool"),  # false: part of the group could not be read in this poll
        # Schema 3: true when this poll's topic_polls rows of the group were written too (the
        # statistics job reads those instead of the queue rows only when every row says so)
        ("topic_polls", "bool"),
    ),
    # Schema 3. One row per group, topic and poll: the sums over the queue rows of that poll,
    # with the statistics job's definitions (transforms.py), computed by the writer from the
    # queue rows' steps: the job then reads a row per topic instead of one per queue.
    "topic_polls": (
        ("ts", "timestamp"),
        ("group", "string"),
        ("topic", "string"),
        ("retry", "bool"),
        ("queues", "int32"),  # queue rows of the poll
        ("unknown_queues", "int32"),  # of which the lag, or a lagging queue's lag seconds, is unknown
        ("lag", "int64"),  # sum of the known lags
        ("worst_lag_seconds", "float64"),  # the largest lag seconds of a lagging queue
        ("consumed", "int64"),  # sum of the positive consumed steps (a backward move counts 0)
        ("produced", "int64"),  # sum of the positive produced steps
        ("resets", "int32"),  # queues whose committed offset moved backwards
    ),
}

# Columns added after schema 1, by table: files written before them are read with these null.
ADDED = {
    "queue_offsets": ("previous_ts", "consumed_step", "produced_step", "steps"),
    "group_stats": ("topic_polls",),
    "topic_polls": (),
}

# Hive-style partition directories: <table>/cluster=<name>/date=<YYYY-MM-DD>/part-*.parquet
PARTITIONS = (("cluster", "string"), ("date", "string"))

SPARK_TYPES = {
    "timestamp": "timestamp",
    "string": "string",
    "int32": "int",
    "int64": "bigint",
    "float64": "double",
    "bool": "boolean",
}


def arrow_schema(table: str):
    """The pyarrow schema the poller writes `table` with (partition columns are directories)."""
    import pyarrow as pa

    types = {
        "timestamp": pa.timestamp("ms", tz="UTC"),
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
    }
    return pa.schema(
        [(name, types[kind]) for name, kind in COLUMNS[table]], metadata={"schema_version": SCHEMA_VERSION}
    )


def spark_ddl(table: str) -> str:
    """The Spark DDL the job reads `table` with: its columns, then the partition columns."""
    return ", ".join(f"`{name}` {SPARK_TYPES[kind]}" for name, kind in (*COLUMNS[table], *PARTITIONS))
