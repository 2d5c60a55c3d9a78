"""Compaction without a lock: parts named by their polls, inputs kept for a grace, parts that
share polls merged, and the previous layout's staged rows taken in; retention."""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.live.history_compaction import _compact_partition
from consumers.live.history_files import cover, list_partitions, open_location, part_name, polls_of, write_file
from tests.live.test_history import DAY1, group_rows

DAY = dt.date(2026, 11, 20)
START = DAY1 - 3_600_000  # 22:59:50, the polls below all on DAY


def polled(store: HistoryStore, polls: range, group: str = "g") -> None:
    for i in polls:
        store.append("c", {"group_stats": group_rows(group, [START + i * 15_000], [i])}, poll_id=i)


def names(store: HistoryStore) -> list[str]:
    return [p.rsplit("/", 1)[-1] for p in store.files("group_stats", "c")]


def age(store: HistoryStore, name: str, seconds: float) -> None:
    [path] = [p for p in store.files("group_stats", "c") if p.endswith(name)]
    os.utime(path, (time.time() - seconds, time.time() - seconds))


def test_poll_files_become_a_part_kept_beside_them_until_the_grace_is_over(tmp_path):
    store = HistoryStore(tmp_path, state=MemoryOffsets(), grace=600)
    polled(store, range(1, 6), group="x")
    polled(store, range(6, 8), group="a")
    before = store.read("group_stats", "c")
    assert store.compact("c", min_files=4, today=DAY) == 7
    part = part_name(frozenset(map(str, range(1, 8))))
    assert len(names(store)) == 8 and part in names(store)
    merged = pq.read_table(tmp_path / "group_stats" / "cluster=c" / "date=2026-11-20" / part)
    assert merged["group"].to_pylist() == ["a"] * 2 + ["x"] * 5  # sorted by group, then time
    assert store.read("group_stats", "c").equals(before)
    assert store.compact("c", min_files=4, today=DAY) == 0 and len(names(store)) == 8  # within the grace
    age(store, part, 601)
    store.compact("c", min_files=4, today=DAY)
    assert names(store) == [part] and store.read("group_stats", "c").equals(before)


def test_two_compactions_that_listed_the_same_files_write_one_part(tmp_path):
    store = HistoryStore(tmp_path, state=MemoryOffsets(), grace=600)
    polled(store, range(1, 5))
    filesystem, base = open_location(str(tmp_path))
    folder = f"{base}/group_stats/cluster=c"
    listed = list_partitions(filesystem, folder)["2026-11-20"]  # both list before either writes
    for _ in range(2):
        assert _compact_partition(filesystem, f"{folder}/date=2026-11-20", "group_stats", listed, grace=600,
                                  closed=False, min_files=4, min_parts=16) == 4  # fmt: skip
    assert sorted(names(store)) == sorted(
        [part_name(frozenset("1234")), *(f"poll-{i:013d}.parquet" for i in range(1, 5))]
    )


def test_parts_that_share_polls_are_read_once_and_merged(tmp_path):
    """Two compactions that listed the partition at different times: one part of polls 1-4,
    one of 3-6 (the first one's deletions not yet seen by the second)."""
    store = HistoryStore(tmp_path, state=MemoryOffsets(), grace=0)
    polled(store, range(1, 7))
    filesystem, base = open_location(str(tmp_path))
    folder = f"{base}/group_stats/cluster=c/date=2026-11-20"
    for polls in (range(1, 5), range(3, 7)):
        rows = pa.concat_tables([group_rows("g", [START + i * 15_000], [i]) for i in polls])
        write_file(filesystem, f"{folder}/{part_name(frozenset(map(str, polls)))}", rows, frozenset(map(str, polls)))
    assert cover(filesystem, store.files("group_stats", "c")).shared
    assert store.read("group_stats", "c")["lag"].to_pylist() == [1, 2, 3, 4, 5, 6]
    inputs = store.stats_inputs(["c"], [DAY])
    assert not inputs.deduplicated  # the job drops the repeated rows itself
    assert store.compact("c", today=DAY) == 2
    [part] = store.files("group_stats", "c")
    assert polls_of(filesystem, part) == frozenset("123456") and pq.read_table(part).num_rows == 6


def test_a_partition_of_many_parts_or_of_a_day_that_is_over_becomes_one_part(tmp_path):
    store = HistoryStore(tmp_path, state=MemoryOffsets(), grace=0)
    for first in range(0, 6, 2):
        polled(store, range(first + 1, first + 3))
        store.compact("c", min_files=2, min_parts=3, today=DAY)
    assert len(names(store)) == 3
    store.compact("c", min_files=2, min_parts=3, today=DAY)
    assert names(store) == [part_name(frozenset("123456"))]  # three parts made one
    polled(store, range(7, 8))  # a late poll (a host's spool drained after midnight)
    assert store.compact("c", today=DAY) == 0
    assert store.compact("c", today=DAY + dt.timedelta(days=1)) == 2
    assert names(store) == [part_name(frozenset("1234567"))]


def test_rows_the_previous_layout_had_staged_are_taken_into_their_partition(tmp_path):
    store = HistoryStore(tmp_path, state=MemoryOffsets(), grace=0)
    staged = tmp_path / "_staging" / "group_stats" / "cluster=c"
    staged.mkdir(parents=True)
    rows = group_rows("g", [START], [4])
    with ipc.new_file(staged / "1795215590000-1-abcd0123.arrow", rows.schema) as writer:
        writer.write_table(rows)
    store.compact("c", today=DAY)
    assert names(store) == ["staged-1795215590000-1-abcd0123.parquet"] and not list(staged.iterdir())
    assert store.read("group_stats", "c")["lag"].to_pylist() == [4]


def test_retention_drops_old_dates_and_the_previous_layouts_snapshots(tmp_path):
    store = HistoryStore(tmp_path, state=MemoryOffsets())
    polled(store, range(1, 2))
    (tmp_path / "_snapshots" / "run-1").mkdir(parents=True)
    assert store.prune(30, today=DAY + dt.timedelta(days=30)) == []
    assert len(store.prune(30, today=DAY + dt.timedelta(days=31))) == 1
    assert store.files("group_stats", "c") == [] and not (tmp_path / "_snapshots").exists()
