"""Synthetic poll history in the history's schema and layout (consumers/live/history.py), for
the statistics benchmark and the statistics screenshots: many groups over whole days,
written with pyarrow and numpy in seconds instead of days of polling.

Each queue gains 0..19 messages per poll and its consumer takes up to 29, so lag stays at a few
messages; in `slow_hours` consumers take at most 15, so lag and lag seconds build up (a visible
SLO breach in the afternoon, caught up within the next hour) and the health says FALLING_BEHIND. Hours in
`missing_hours` have no poll at all (a gap the charts must show as a gap).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from consumers.live.history import GROUP_STATS, QUEUE_OFFSETS, topic_polls

POLLS_PER_FILE = 240


def write_history(
    root: Path,
    first_day: dt.date,
    days: int,
    *,
    cluster: str = "bench",
    groups: int,
    queues: int,
    interval: int,
    seed: int,
    slow_hours=lambda day_index: (),
    missing_hours=lambda day_index: (),
    prefix: str = "bench-group-",
    steps: bool = True,
    topics: bool = True,
) -> int:
    """Writes `days` days of both tables, offsets continuing from day to day; returns the
    number of queue rows. `slow_hours` and `missing_hours` give each day's (by its index).
    `steps`: write each row's steps since the queue's previous row, as the poller does since
    history schema 2 (computed here from the generator's own arrays); False writes rows as
    schema 1 did (the job then computes them with its window). `topics` (with `steps`): write
    each poll's per-topic sums as the poller does since schema 3 (with its function,
    history.topic_polls); False writes the history as schema 2 did."""
    rng = np.random.default_rng(seed)
    polls = 86400 // interval
    width = groups * queues
    group_names = np.array([f"{prefix}{g:04d}" for g in range(groups)], dtype=object)
    row_groups = np.repeat(group_names, queues)
    row_queue = np.tile(np.arange(queues, dtype=np.int32), groups)
    row_broker = np.where(row_queue % 2 == 0, "broker-a", "broker-b").astype(object)
    state = {
        "broker": rng.integers(0, 1_000_000, width).astype(np.int64),
        "dlq": np.zeros(groups, dtype=np.int64),
    }
    state["consumer"] = state["broker"] - rng.integers(0, 10, width)
    state["steps"] = steps
    state["topics"] = steps and topics
    state["last"] = None  # (ts, broker, consumer) of the last written poll
    written = 0
    for index in range(days):
        day = first_day + dt.timedelta(days=index)
        names = (row_groups, row_queue, row_broker, group_names)
        written += _write_day(root, cluster, day, rng, state, names, polls=polls, interval=interval,
                              slow=slow_hours(index), missing=missing_hours(index))  # fmt: skip
    return written


def _write_day(root, cluster, day, rng, state, names, *, polls, interval, slow, missing) -> int:
    row_groups, row_queue, row_broker, group_names = names
    groups, queues = len(group_names), len(row_queue) // len(group_names)
    width = groups * queues
    broker, consumer, dlq = state["broker"], state["consumer"], state["dlq"]
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    written = 0
    for first in range(0, polls, POLLS_PER_FILE):
        ts, b_cols, c_cols, lag_s, falling, previous = [], [], [], [], [], []
        for p in range(first, min(polls, first + POLLS_PER_FILE)):
            moment = start + dt.timedelta(seconds=p * interval)
            is_slow = moment.hour in slow
            broker = broker + rng.integers(0, 20, width)
            consumer = np.minimum(broker, consumer + rng.integers(0, 16 if is_slow else 30, width))
            if moment.hour in missing:
                continue
            ts.append(np.full(width, int(moment.timestamp() * 1000)))
            b_cols.append(broker)
            c_cols.append(consumer)
            previous.append(state["last"])
            state["last"] = (ts[-1], broker, consumer)
            # about 9.5 messages a poll arrive: the oldest unconsumed one waited about lag/9.5 polls
            lag_s.append((broker - consumer) * interval / 9.5 + rng.random(width))
            falling.append(is_slow)
        if not ts:
            continue
        count = len(ts)
        b, c = np.concatenate(b_cols), np.concatenate(c_cols)
        lag = b - c
        seconds = np.where(lag > 0, np.concatenate(lag_s), 0.0)
        queue_table = pa.table(
            {
                "ts": pa.array(np.concatenate(ts), pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
                "group": pa.array(np.tile(row_groups, count), pa.string()),
                "topic": pa.array(np.full(width * count, "T-orders", dtype=object), pa.string()),
                "broker": pa.array(np.tile(row_broker, count), pa.string()),
                "queue_id": pa.array(np.tile(row_queue, count), pa.int32()),
                "retry": pa.array(np.zeros(width * count, dtype=bool)),
                "broker_offset": pa.array(b),
                "consumer_offset": pa.array(c),
                "min_offset": pa.array(np.zeros(width * count, dtype=np.int64)),
                "lag": pa.array(lag),
                "lag_seconds": pa.array(seconds),
                "last_consume_ms": pa.nulls(width * count, pa.timestamp("ms", tz="UTC")),
                "client_id": pa.nulls(width * count, pa.string()),
                **_steps(previous, b, c, width, state["steps"]),
            },
            schema=QUEUE_OFFSETS,
        )
        _write(root / "queue_offsets", cluster, day, first, queue_table)
        if state["topics"]:
            _write(root / "topic_polls", cluster, day, first, topic_polls(queue_table))
        per_group = (count, groups, queues)
        dlq = dlq + (rng.random(groups) < 0.01)
        states = np.where(np.repeat(np.array(falling), groups), "FALLING_BEHIND", "OK").astype(object)
        group_table = pa.table(
            {
                "ts": queue_table["ts"].take(pa.array(np.arange(0, width * count, queues))),
                "group": pa.array(np.tile(group_names, count), pa.string()),
                "online": pa.array(np.ones(groups * count, dtype=bool)),
                "clients": pa.array(np.ones(groups * count, dtype=np.int32)),
                "lag": pa.array(lag.reshape(per_group).sum(axis=2).ravel()),
                "retry_lag": pa.array(np.zeros(groups * count, dtype=np.int64)),
                "lag_seconds_max": pa.array(seconds.reshape(per_group).max(axis=2).ravel()),
                "consume_tps": pa.array(np.full(groups * count, 10.0 * queues / interval)),
                "dlq_count": pa.array(np.tile(dlq, count)),
                "health": pa.array(states, pa.string()),
                "complete": pa.array(np.ones(groups * count, dtype=bool)),
                "topic_polls": pa.array(np.full(groups * count, state["topics"])),
            },
            schema=GROUP_STATS,
        )
        _write(root / "group_stats", cluster, day, first, group_table)
        written += queue_table.num_rows
    state.update(broker=broker, consumer=consumer, dlq=dlq)
    return written


def _steps(previous: list, broker: np.ndarray, consumer: np.ndarray, width: int, written: bool) -> dict:
    """The schema-2 step columns: each row against the same queue's previous written row."""
    rows = width * len(previous)
    if not written:
        return {name: pa.nulls(rows, QUEUE_OFFSETS.field(name).type)
                for name in ("previous_ts", "consumed_step", "produced_step", "steps")}  # fmt: skip
    known = np.concatenate([np.full(width, last is not None) for last in previous])
    zeros = np.zeros(width, dtype=np.int64)
    prev_ts = np.concatenate([last[0] if last is not None else zeros for last in previous])
    prev_b = np.concatenate([last[1] if last is not None else zeros for last in previous])
    prev_c = np.concatenate([last[2] if last is not None else zeros for last in previous])
    return {
        "previous_ts": pa.array(prev_ts, pa.int64(), mask=~known).cast(pa.timestamp("ms", tz="UTC")),
        "consumed_step": pa.array(consumer - prev_c, pa.int64(), mask=~known),
        "produced_step": pa.array(broker - prev_b, pa.int64(), mask=~known),
        "steps": pa.array(np.ones(rows, dtype=bool)),
    }


def _write(table_root: Path, cluster: str, day: dt.date, first: int, table: pa.Table) -> None:
    partition = table_root / f"cluster={cluster}" / f"date={day.isoformat()}"
    partition.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, partition / f"part-{first:05d}.parquet", compression="zstd", row_group_size=64 * 1024)
