"""A poll's history rows: the three tables' schemas, the rows a poll's documents give, the
per-topic sums of its queue rows, and the helpers every writer and reader of them shares.

The schemas are defined once, in history_schema.py, which the statistics job
(consumers/stats/job.py) reads the history with too. They, and `history_tables` that fills
them from a poll's documents, are a contract with that job: add columns at the end, never
change or remove one, and bump SCHEMA_VERSION when adding.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from .documents import GroupDocument
from .history_schema import ADDED, arrow_schema

TIMESTAMP = pa.timestamp("ms", tz="UTC")

# The columns, with what each holds, are in history_schema.py, shared with the statistics job.
QUEUE_OFFSETS = arrow_schema("queue_offsets")  # one row per queue per poll
GROUP_STATS = arrow_schema("group_stats")  # one row per group per poll
TOPIC_POLLS = arrow_schema("topic_polls")  # one row per group, topic and poll: sums of the queue rows

SCHEMAS = {"queue_offsets": QUEUE_OFFSETS, "group_stats": GROUP_STATS, "topic_polls": TOPIC_POLLS}

# What makes a row unique within a cluster: a group is read once per poll, at its own time
ROW_KEYS = {
    "queue_offsets": ("group", "topic", "broker", "queue_id", "ts"),
    "group_stats": ("group", "ts"),
    "topic_polls": ("group", "topic", "ts"),
}
STEP_COLUMNS = ("previous_ts", "consumed_step", "produced_step", "steps")


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
            ("topic_polls", True),  # history_state.record_poll writes them from the queue rows
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
                ("previous_ts", None),  # the steps: history_state.record_poll computes them
                ("consumed_step", None),
                ("produced_step", None),
                ("steps", None),
            ):
                queue_rows[name].append(value)
    return {
        "queue_offsets": pa.Table.from_pydict(queue_rows, schema=QUEUE_OFFSETS),
        "group_stats": pa.Table.from_pydict(group_rows, schema=GROUP_STATS),
    }


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
    return sort_rows(pa.Table.from_arrays(arrays, schema=TOPIC_POLLS))


def unstepped(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """A poll's rows as a writer that did not know the queues' previous rows writes them: no
    steps and no per-topic sums, and group rows that say so. The statistics job then computes
    that day from the raw offsets with its own window, which needs nothing from the writer."""
    out = {}
    for name, table in tables.items():
        if name == "queue_offsets":
            for column in STEP_COLUMNS:
                index = table.schema.get_field_index(column)
                table = table.set_column(index, column, pa.nulls(table.num_rows, table.schema.field(column).type))
        elif name == "group_stats":
            index = table.schema.get_field_index("topic_polls")
            table = table.set_column(index, "topic_polls", pa.repeat(pa.scalar(False), table.num_rows))
        elif name == "topic_polls":
            continue
        out[name] = table
    return out


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


def sort_rows(table: pa.Table) -> pa.Table:
    """Group, then queue, then time: a reader of one group skips most row groups."""
    keys = [k for k in ("group", "topic", "broker", "queue_id") if k in table.column_names]
    return table.sort_by([(k, "ascending") for k in (*keys, "ts")])


def dedupe_rows(table: pa.Table, name: str) -> pa.Table:
    """Each row once (the first of its key), for rows read from files that share polls."""
    if not table.num_rows:
        return table
    keys = list(ROW_KEYS[name])
    indexed = table.select(keys).append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    first = indexed.group_by(keys, use_threads=False).aggregate([("_row", "min")])["_row_min"]
    if len(first) == table.num_rows:
        return table
    return table.take(first.take(pc.sort_indices(first)))  # in the order read


def row_filter(group: str | list[str] | None, since: dt.datetime | None):
    expression = None
    if isinstance(group, list):
        expression = pc.field("group").isin(group)
    elif group is not None:
        expression = pc.field("group") == group
    if since is not None:
        after = pc.field("ts") >= pa.scalar(since, type=TIMESTAMP)
        expression = after if expression is None else expression & after
    return expression


def dates_of(table: pa.Table) -> dict[str, pa.Table]:
    """The rows of each UTC date (the history's partitions)."""
    if not table.num_rows:
        return {}
    # days since the epoch as integers: formatting every row's date took most of a poll's write
    days = pc.divide(table["ts"].cast(pa.int64()), 86_400_000)
    epoch = dt.date(1970, 1, 1)
    return {
        (epoch + dt.timedelta(days=day)).isoformat(): table.filter(pc.equal(days, day))
        for day in pc.unique(days).to_pylist()
    }
