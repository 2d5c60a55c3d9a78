"""The Parquet history store: a file per poll, table and date, reading back each poll once,
retention, and the files a statistics run is handed."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from consumers.live.history import (
    GROUP_STATS,
    QUEUE_OFFSETS,
    SCHEMA_VERSION,
    HistoryStore,
    MemoryOffsets,
    history_tables,
)  # fmt: skip
from consumers.live.history_files import POLLS_KEY

DAY1 = int(dt.datetime(2026, 11, 20, 23, 59, 50, tzinfo=dt.UTC).timestamp() * 1000)
DAY2 = DAY1 + 20_000  # ten seconds past midnight


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
            "topic_polls": [True] * n,
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
            **{name: [None] * queues for name in ("previous_ts", "consumed_step", "produced_step", "steps")},
        },
        schema=QUEUE_OFFSETS,
    )


def store_at(path, **options) -> HistoryStore:
    return HistoryStore(path, state=MemoryOffsets(), **options)


def name_of(path: str) -> tuple[str, str]:
    folder, name = path.rsplit("/", 2)[-2:]
    return folder, name


def test_each_poll_is_a_file_per_table_and_date_named_by_its_poll(tmp_path):
    store = store_at(tmp_path)
    for i, ts in enumerate((DAY1, DAY2)):
        store.append("c1", {"group_stats": group_rows("g", [ts], [i]), "queue_offsets": queue_rows("g", ts, 4)},
                     poll_id=ts - 5)  # fmt: skip
    assert [name_of(p) for p in store.files("group_stats", "c1")] == [
        ("date=2026-11-20", f"poll-{DAY1 - 5}.parquet"),
        ("date=2026-11-21", f"poll-{DAY2 - 5}.parquet"),
    ]
    assert len(store.files("queue_offsets", "c1")) == len(store.files("topic_polls", "c1")) == 2
    assert store.read("group_stats", "c1")["lag"].to_pylist() == [0, 1]
    table = pq.read_table(store.files("group_stats", "c1")[0])
    assert table.schema.equals(GROUP_STATS) and table.schema.metadata[b"schema_version"] == SCHEMA_VERSION.encode()
    assert pq.read_metadata(store.files("group_stats", "c1")[0]).metadata[POLLS_KEY] == str(DAY1 - 5).encode()
    assert not list(tmp_path.rglob(".*"))  # no temporary file left behind


def test_a_poll_across_midnight_is_a_file_in_each_date(tmp_path):
    store = store_at(tmp_path)
    groups = pa.concat_tables([group_rows("a", [DAY1], [1]), group_rows("b", [DAY2], [2])])
    store.append("c", {"group_stats": groups}, poll_id=DAY1)
    assert [name_of(p) for p in store.files("group_stats", "c")] == [
        ("date=2026-11-20", f"poll-{DAY1}.parquet"), ("date=2026-11-21", f"poll-{DAY1}.parquet")]  # fmt: skip
    assert store.read("group_stats", "c")["group"].to_pylist() == ["a", "b"]


def test_writing_a_recorded_poll_again_writes_the_same_file(tmp_path):
    store = store_at(tmp_path)
    recorded = store.record("c", 7, {"group_stats": group_rows("g", [DAY1], [1])})
    store.write("c", 7, recorded)
    first = store.files("group_stats", "c")
    store.write("c", 7, recorded)  # a retry of a write that had in fact gone through
    assert store.files("group_stats", "c") == first
    assert store.read("group_stats", "c").num_rows == 1


def test_reads_filter_by_group_and_time_and_read_each_poll_once(tmp_path):
    store = store_at(tmp_path, grace=3600)
    store.append("c", {"group_stats": group_rows("a", [DAY1], [1])})
    store.append("c", {"group_stats": group_rows("a", [DAY2], [2])})
    store.append("c", {"group_stats": group_rows("b", [DAY2 + 1], [9])})
    # a part holding the last two polls beside them (a compaction within its grace)
    assert store.compact("c", min_files=2, today=dt.date(2026, 11, 21)) == 2
    assert len(store.files("group_stats", "c")) == 4
    since = dt.datetime.fromtimestamp(DAY2 / 1000, dt.UTC)
    assert store.read("group_stats", "c", group="a", since=since)["lag"].to_pylist() == [2]
    assert store.read("group_stats", "c", group="a")["lag"].to_pylist() == [1, 2]
    assert store.read("group_stats", "c", groups={"a", "b"})["lag"].to_pylist() == [1, 2, 9]
    assert store.read("group_stats", "other").num_rows == 0


def test_dates_past_the_retention_are_dropped(tmp_path):
    store = store_at(tmp_path)
    store.append("c", {"group_stats": group_rows("g", [DAY1, DAY2], [1, 2])})
    removed = store.prune(1, today=dt.date(2026, 11, 22))
    assert [p.rsplit("/", 2)[-2:] for p in removed] == [["cluster=c", "date=2026-11-20"]]
    assert [name_of(p)[0] for p in store.files("group_stats", "c")] == ["date=2026-11-21"]


def test_the_store_is_a_hive_partitioned_dataset_for_spark(tmp_path):
    store = store_at(tmp_path)
    store.append("east", {"queue_offsets": queue_rows("g", DAY1, 3)})
    store.append("west", {"queue_offsets": queue_rows("g", DAY2, 2)})
    dataset = ds.dataset(tmp_path / "queue_offsets", format="parquet", partitioning="hive")
    table = dataset.to_table()
    assert table.num_rows == 5
    assert sorted(set(zip(table["cluster"].to_pylist(), table["date"].to_pylist(), strict=True))) == [
        ("east", "2026-11-20"),
        ("west", "2026-11-21"),
    ]
    assert store.spark_url == f"file://{tmp_path}"


def test_rows_that_do_not_fit_the_schema_are_refused(tmp_path):
    store = store_at(tmp_path)
    bad = pa.table({"ts": [1], "group": ["g"]})
    with pytest.raises((ValueError, pa.ArrowInvalid, KeyError)):
        store.append("c", {"group_stats": bad})


def test_a_poll_given_again_is_not_recorded_or_written_twice(tmp_path):
    store = store_at(tmp_path)
    first = {"queue_offsets": queue_rows("g", DAY1, 1), "group_stats": group_rows("g", [DAY1], [5])}
    store.append("c", first, poll_id=1)
    assert store.record("c", 1, first) is None  # given again: its first recording is the one written
    store.append("c", first, poll_id=1)
    assert sum(pq.read_metadata(p).num_rows for p in store.files("queue_offsets", "c")) == 1
    # a poll older than the rows stepped from (a clock set back) is written, without steps
    store.append("c", {"queue_offsets": queue_rows("g", DAY1 - 15_000, 1)}, poll_id=0)
    rows = store.read("queue_offsets", "c")
    assert rows.num_rows == 2 and rows["steps"].to_pylist() == [None, True]


def test_parts_written_before_the_poll_files_are_read_and_merged_with_them(tmp_path):
    store = store_at(tmp_path)
    old = queue_rows("g", DAY1, 2)
    old = old.select([c for c in old.column_names if c not in ("previous_ts", "consumed_step", "produced_step",
                                                             "steps")])  # fmt: skip
    partition = tmp_path / "queue_offsets" / "cluster=c" / "date=2026-11-20"
    partition.mkdir(parents=True)
    pq.write_table(old, partition / "part-1795219190000-0a1b2c3d.parquet")  # the previous layout's name
    # the state knows nothing of the old rows: the first poll after them has no steps (the job
    # computes that day from the offsets), and the next is stepped from it
    for i in (1, 2):
        store.append("c", {"queue_offsets": queue_rows("g", DAY1 + i * 3_000, 2)})
    rows = store.read("queue_offsets", "c").sort_by([("ts", "ascending"), ("queue_id", "ascending")]).to_pylist()
    assert [(r["steps"], r["consumed_step"]) for r in rows] == [(None, None)] * 4 + [(True, 0)] * 2
    # the day is over: its files merged, in the current schema, each row once
    assert store.compact("c", today=dt.date(2026, 11, 21), grace=0) == 3
    [merged] = store.files("queue_offsets", "c")
    assert pq.read_table(merged)["steps"].to_pylist() == [None, None, True] * 2  # sorted by queue, then time


def test_a_run_is_handed_the_files_that_hold_each_poll_once_through_a_compaction(tmp_path):
    store = store_at(tmp_path, grace=3600)
    polls = [DAY2 + i * 15_000 for i in range(6)]
    for ts in polls[:5]:
        store.append("c", {"queue_offsets": queue_rows("g", ts, 1), "group_stats": group_rows("g", [ts], [1])})
    before = store.stats_inputs(["c"], [dt.date(2026, 11, 21)])
    assert store.compact("c", min_files=4, today=dt.date(2026, 11, 21)) == 15  # 5 polls x 3 tables, kept
    store.append("c", {"group_stats": group_rows("g", [polls[5]], [1])})
    after = store.stats_inputs(["c"], [dt.date(2026, 11, 20), dt.date(2026, 11, 21)])
    assert before.deduplicated and after.deduplicated and after.polled == {("c", "2026-11-21")}
    assert [u.rsplit("/", 1)[-1][:5] for u in after.files["group_stats"]] == ["part-", "poll-"]
    for inputs in (before, after):  # the files a run chose before the compaction are all still there
        for urls in inputs.files.values():
            read = ds.dataset([u.removeprefix("file://") for u in urls], format="parquet").to_table()
            assert read.num_rows == len(set(zip(read["group"].to_pylist(), read["ts"].to_pylist(), strict=True)))


def test_rows_of_documents_go_through_the_store(tmp_path):
    from consumers.live.documents import GroupDocument

    store = store_at(tmp_path)
    store.append("c", history_tables([GroupDocument(group="g", as_of=DAY1 / 1000, lag=3, online=True)]))
    assert store.read("group_stats", "c")["lag"].to_pylist() == [3]
