"""The Parquet history store: staging, flushing, compaction, retention, reading back."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from consumers.live.history import GROUP_STATS, QUEUE_OFFSETS, SCHEMA_VERSION, HistoryStore


def group_rows(group: str, ts_ms: list[int], lag: list[int | None]) -> pa.Table:
    n = len(ts_ms)
    return pa.Table.from_pydict(
        {
            "ts": ts_ms,
            "group": [group] * n,
            "online": [True] * n,
            "clients": [1] * n,
            "lag": lag,
            "retry_lag": [0] * n,
            "lag_seconds_max": [1.5] * n,
            "consume_tps": [None] * n,
            "dlq_count": [0] * n,
            "health": ["OK"] * n,
            "complete": [True] * n,
        },
        schema=GROUP_STATS,
    )


def queue_rows(group: str, ts_ms: int, queues: int) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "ts": [ts_ms] * queues,
            "group": [group] * queues,
            "topic": ["T"] * queues,
            "broker": ["broker-a"] * queues,
            "queue_id": list(range(queues)),
            "retry": [False] * queues,
            "broker_offset": [10] * queues,
            "consumer_offset": [7] * queues,
            "min_offset": [None] * queues,
            "lag": [3] * queues,
            "lag_seconds": [2.0] * queues,
            "last_consume_ms": [ts_ms] * queues,
            "client_id": ["c1"] * queues,
        },
        schema=QUEUE_OFFSETS,
    )


DAY1 = int(dt.datetime(2026, 11, 20, 23, 59, 50, tzinfo=dt.UTC).timestamp() * 1000)
DAY2 = DAY1 + 20_000  # ten seconds past midnight


def test_polls_are_staged_then_flushed_into_one_file_per_date(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=10**6, flush_seconds=10**6)
    for i, ts in enumerate((DAY1, DAY2)):
        store.append("c1", {"group_stats": group_rows("g", [ts], [i]), "queue_offsets": queue_rows("g", ts, 4)})
    assert store.files("group_stats", "c1") == []  # nothing due yet: still staged
    assert store.read("group_stats", "c1")["lag"].to_pylist() == [0, 1]  # but readable
    assert store.flush("c1") == 4
    files = store.files("group_stats", "c1")
    assert [f.parent.name for f in files] == ["date=2026-11-20", "date=2026-11-21"]
    assert list((tmp_path / "_staging").rglob("*.arrow")) == []
    table = pq.read_table(files[0])
    assert table.schema.equals(GROUP_STATS) and table.schema.metadata[b"schema_version"] == SCHEMA_VERSION.encode()


def test_a_flush_happens_by_itself_on_row_count_or_age(tmp_path):
    by_rows = HistoryStore(tmp_path / "rows", flush_rows=8, flush_seconds=10**6)
    by_rows.append("c", {"queue_offsets": queue_rows("g", DAY1, 4)})
    assert by_rows.files("queue_offsets", "c") == []
    by_rows.append("c", {"queue_offsets": queue_rows("g", DAY1 + 1000, 4)})
    assert len(by_rows.files("queue_offsets", "c")) == 1
    by_age = HistoryStore(tmp_path / "age", flush_rows=10**6, flush_seconds=0.5)
    by_age.append("c", {"group_stats": group_rows("g", [DAY1], [1])})
    time.sleep(0.6)
    by_age.append("c", {"group_stats": group_rows("g", [DAY1 + 1000], [2])})
    assert len(by_age.files("group_stats", "c")) == 1


def test_compaction_merges_parts_sorted_and_reads_stay_the_same(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=1, flush_seconds=10**6)
    for i in range(5):
        store.append("c", {"group_stats": group_rows(f"g{4 - i}", [DAY1 + i], [i])})
    before = store.read("group_stats", "c")
    assert len(store.files("group_stats", "c")) == 5
    assert store.compact("c", min_files=4) == 5
    [merged] = store.files("group_stats", "c")
    assert pq.read_table(merged)["group"].to_pylist() == ["g0", "g1", "g2", "g3", "g4"]
    assert store.read("group_stats", "c").equals(before)


def test_reads_filter_by_group_and_time_and_drop_duplicated_polls(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=10**6, flush_seconds=10**6)
    store.append("c", {"group_stats": group_rows("a", [DAY1, DAY2], [1, 2])})
    store.append("c", {"group_stats": group_rows("b", [DAY1], [9])})
    store.flush("c")
    store.append("c", {"group_stats": group_rows("a", [DAY2], [2])})  # the same poll again, staged
    since = dt.datetime.fromtimestamp(DAY2 / 1000, dt.UTC)
    table = store.read("group_stats", "c", group="a", since=since)
    assert table["lag"].to_pylist() == [2]
    assert store.read("group_stats", "c", group="a")["lag"].to_pylist() == [1, 2]
    assert store.read("group_stats", "other").num_rows == 0


def test_dates_past_the_retention_are_dropped(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=1, flush_seconds=10**6)
    store.append("c", {"group_stats": group_rows("g", [DAY1, DAY2], [1, 2])})
    removed = store.prune(1, today=dt.date(2026, 11, 22))
    assert [p.name for p in removed] == ["date=2026-11-20"]
    assert [f.parent.name for f in store.files("group_stats", "c")] == ["date=2026-11-21"]


def test_the_store_is_a_hive_partitioned_dataset_for_spark(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=1, flush_seconds=10**6)
    store.append("east", {"queue_offsets": queue_rows("g", DAY1, 3)})
    store.append("west", {"queue_offsets": queue_rows("g", DAY2, 2)})
    dataset = ds.dataset(tmp_path / "queue_offsets", format="parquet", partitioning="hive")
    table = dataset.to_table()
    assert table.num_rows == 5
    assert sorted(set(zip(table["cluster"].to_pylist(), table["date"].to_pylist(), strict=True))) == [
        ("east", "2026-11-20"),
        ("west", "2026-11-21"),
    ]


def test_rows_that_do_not_fit_the_schema_are_refused(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=10**6, flush_seconds=10**6)
    bad = pa.table({"ts": [1], "group": ["g"]})
    with pytest.raises((ValueError, pa.ArrowInvalid, KeyError)):
        store.append("c", {"group_stats": bad})
