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


DAY1 = int(dt.datetime(2026, 11, 20, 23, 59, 50, tzinfo=dt.UTC).timestamp() * 1000)
DAY2 = DAY1 + 20_000  # ten seconds past midnight


def test_polls_are_staged_then_flushed_into_one_file_per_date(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=10**6, flush_seconds=10**6)
    for i, ts in enumerate((DAY1, DAY2)):
        store.append("c1", {"group_stats": group_rows("g", [ts], [i]), "queue_offsets": queue_rows("g", ts, 4)})
    assert store.files("group_stats", "c1") == []  # nothing due yet: still staged
    assert store.read("group_stats", "c1")["lag"].to_pylist() == [0, 1]  # but readable
    assert store.flush("c1") == 6  # a file per table (queues, groups, topic polls) and date
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


def offsets(ts_ms: int, rows: list[tuple[int, int | None, int | None]]) -> pa.Table:
    """One poll of group g, topic T: (queue, consumer offset, broker offset) per queue."""
    table = queue_rows("g", ts_ms, len(rows))
    table = table.set_column(table.schema.get_field_index("queue_id"), "queue_id",
                             pa.array([q for q, _, _ in rows], pa.int32()))  # fmt: skip
    for name, index in (("consumer_offset", 1), ("broker_offset", 2)):
        values = pa.array([r[index] for r in rows], pa.int64())
        table = table.set_column(table.schema.get_field_index(name), name, values)
    return table


def steps_of(table: pa.Table) -> list[tuple]:
    return [(r["queue_id"], r["previous_ts"], r["consumed_step"], r["produced_step"], r["steps"])
            for r in table.sort_by("queue_id").to_pylist()]  # fmt: skip


def test_each_queue_row_gets_its_steps_since_that_queues_previous_row_across_polls_and_gaps(tmp_path):
    """Worked by hand: queue 0 goes 5/10, 8/12, then is not polled, then 20/30; queue 1's
    broker offset is unknown once (the step after it spans both polls)."""
    store = HistoryStore(tmp_path, flush_rows=10**9, flush_seconds=10**9)
    t = [DAY1 + i * 15_000 for i in range(4)]
    store.append("c", {"queue_offsets": offsets(t[0], [(0, 5, 10), (1, 1, 4)])})
    store.append("c", {"queue_offsets": offsets(t[1], [(0, 8, 12), (1, 2, None)])})
    store.append("c", {"queue_offsets": offsets(t[2], [(1, 2, 6)])})  # queue 0 not read this poll
    store.append("c", {"queue_offsets": offsets(t[3], [(0, 20, 30), (1, 1, 6)])})  # queue 1 moved back
    store.flush("c")
    rows = store.read("queue_offsets", "c")
    at = {ms: rows.filter(pa.compute.equal(rows["ts"], pa.scalar(ms, pa.timestamp("ms", tz="UTC")))) for ms in t}
    when = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC)  # noqa: E731
    assert steps_of(at[t[0]]) == [(0, None, None, None, True), (1, None, None, None, True)]
    assert steps_of(at[t[1]]) == [(0, when(t[0]), 3, 2, True), (1, when(t[0]), 1, None, True)]
    assert steps_of(at[t[2]]) == [(1, when(t[1]), 0, 2, True)]  # 6 - 4: the last known broker offset
    assert steps_of(at[t[3]]) == [(0, when(t[1]), 12, 18, True), (1, when(t[2]), -1, 0, True)]
    # the same rows given at once (a backfill) get the same steps
    many = pa.concat_tables([offsets(ms, r) for ms, r in zip(t, [[(0, 5, 10), (1, 1, 4)], [(0, 8, 12), (1, 2, None)],
                             [(1, 2, 6)], [(0, 20, 30), (1, 1, 6)]], strict=True)])  # fmt: skip
    other = HistoryStore(tmp_path / "other", flush_rows=10**9, flush_seconds=10**9)
    other.append("c", {"queue_offsets": many})
    assert other.read("queue_offsets", "c").to_pylist() == rows.to_pylist()


def test_parts_written_before_schema_2_are_read_with_null_steps(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=10**9, flush_seconds=10**9)
    old = queue_rows("g", DAY1, 2)
    old = old.select([c for c in old.column_names if c not in ("previous_ts", "consumed_step", "produced_step",
                                                             "steps")])  # fmt: skip
    partition = tmp_path / "queue_offsets" / "cluster=c" / "date=2026-11-20"
    partition.mkdir(parents=True)
    pq.write_table(old, partition / "part-old.parquet")
    store.append("c", {"queue_offsets": queue_rows("g", DAY1 + 5_000, 2)})
    rows = store.read("queue_offsets", "c").sort_by([("ts", "ascending"), ("queue_id", "ascending")]).to_pylist()
    # the writer never saw the old rows: the new ones have no previous row to step from
    assert [(r["steps"], r["consumed_step"]) for r in rows] == [(None, None), (None, None), (True, None), (True, None)]
    store.flush("c")
    assert store.compact("c", min_files=2) == 2  # the old part and the new one, merged in the new schema
    merged = store.read("queue_offsets", "c").sort_by([("ts", "ascending"), ("queue_id", "ascending")])
    assert merged["steps"].to_pylist() == [None, None, True, True]


def test_a_poll_given_again_is_not_written_twice(tmp_path):
    """A poll spooled after a failure that came after its rows were in fact staged (a flush that
    failed) is replayed by the next poll: the history must not hold it twice, since the
    statistics job reads a snapshot without deduplicating."""
    store = HistoryStore(tmp_path, flush_rows=10**9, flush_seconds=10**9)
    first = {"queue_offsets": offsets(DAY1, [(0, 5, 10)]), "group_stats": group_rows("g", [DAY1], [5])}
    store.append("c", first)
    store.append("c", first)  # replayed
    store.append("c", {"queue_offsets": offsets(DAY1 + 15_000, [(0, 9, 12)]),
                       "group_stats": group_rows("g", [DAY1 + 15_000], [3])})  # fmt: skip
    store.flush("c")
    assert store.read("queue_offsets", "c")["consumed_step"].to_pylist() == [None, 4]
    assert store.read("group_stats", "c").num_rows == 2
    assert sum(pq.read_metadata(p).num_rows for p in store.files("queue_offsets", "c")) == 2
    # the state remembers the recent polls, not only the last: an older one replayed is skipped too,
    # and a poll older than the newest but never written (a clock set back) is written
    store.append("c", first)
    store.append("c", {"queue_offsets": offsets(DAY1 - 15_000, [(0, 4, 9)])})
    store.flush("c")
    assert store.read("queue_offsets", "c").num_rows == 3


def test_a_snapshot_keeps_its_files_through_a_compaction_and_holds_each_poll_once(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=1, flush_seconds=10**9)  # a part per poll
    for i in range(4):
        store.append("c", {"queue_offsets": offsets(DAY1 + i * 15_000, [(0, 5 + i, 10 + i)])})
    store.append("c", {"queue_offsets": offsets(DAY1 + 4 * 15_000, [(0, 9, 14)])})  # staged, not flushed
    snapshot = tmp_path / "_snapshots" / "run-1"
    days = [dt.date(2026, 11, 20), dt.date(2026, 11, 21)]  # DAY1 is ten seconds before midnight
    # flushed first: all five polls, a part each of the queue rows and of the topic polls
    assert store.snapshot(["c"], days, snapshot) == 10
    assert store.compact("c", min_files=2) == 8  # the next day's parts it linked are merged and unlinked
    read = ds.dataset(str(snapshot / "queue_offsets"), format="parquet", partitioning="hive").to_table()
    assert sorted(read["consumer_offset"].to_pylist()) == [5, 6, 7, 8, 9]  # each poll once, none lost
    assert store.prune(30, today=dt.date(2026, 11, 21)) == []  # a fresh snapshot stays


def test_each_polls_topic_rows_are_the_sums_of_its_stepped_queue_rows_worked_by_hand(tmp_path):
    store = HistoryStore(tmp_path, flush_rows=10**9, flush_seconds=10**9)
    rows = lambda ts, queues: pa.Table.from_pylist(  # noqa: E731
        [{"ts": ts, "group": "g", "topic": t, "broker": "b", "queue_id": q, "retry": t.startswith("%RETRY%"),
          "consumer_offset": c, "broker_offset": b, "lag": lag, "lag_seconds": s} for t, q, c, b, lag, s in queues],
        schema=QUEUE_OFFSETS,
    )  # fmt: skip
    store.append("c", {"queue_offsets": rows(DAY1, [("T", 0, 5, 10, 5, 3.0), ("T", 1, 7, 7, 0, None)])})
    # queue 0 consumed 4 and got 2 more; queue 1 moved back 7 -> 2 (a reset: counts 0 consumed),
    # its lag seconds unknown while lagging; queue 2 is new (no step); the retry topic has one queue
    second_poll = [("T", 0, 9, 12, 3, 1.5), ("T", 1, 2, 8, 6, None), ("T", 2, 1, 1, 0, 0.0),
                   ("%RETRY%g", 0, 0, 3, None, None)]  # fmt: skip
    store.append("c", {"queue_offsets": rows(DAY2, second_poll)})
    got = store.read("topic_polls", "c").to_pylist()
    assert [(r["ts"].timestamp() * 1000, r["topic"]) for r in got] == [(DAY2, "%RETRY%g"), (DAY1, "T"), (DAY2, "T")]
    retry, first, second = got
    assert (first["queues"], first["unknown_queues"], first["lag"], first["worst_lag_seconds"]) == (2, 0, 5, 3.0)
    assert (first["consumed"], first["produced"], first["resets"]) == (None, None, 0)  # nothing to compare with
    assert (second["queues"], second["unknown_queues"], second["lag"], second["worst_lag_seconds"]) == (3, 1, 9, 1.5)
    assert (second["consumed"], second["produced"], second["resets"]) == (4, 3, 1)  # 4 + 0; 2 + 1; queue 1
    assert (retry["retry"], retry["queues"], retry["unknown_queues"], retry["lag"], retry["consumed"]) == (
        True, 1, 1, None, None)  # fmt: skip
