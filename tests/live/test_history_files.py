"""Where the history lives (HISTORY_URL as pyarrow and Spark name it), its files' names, and
which files a reader chooses so that it reads each poll once."""

from __future__ import annotations

import datetime as dt

import pyarrow.fs as pafs

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.live.history_files import cover, open_location, part_name, poll_name, spark_url, write_file
from tests.live.test_history import DAY1, group_rows


def test_a_location_is_a_folder_a_file_url_or_a_store_url_and_spark_names_the_same_place(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert open_location("history")[1] == open_location(f"file://{tmp_path}/history")[1] == f"{tmp_path}/history"
    assert isinstance(open_location("history")[0], pafs.LocalFileSystem)
    assert spark_url("history") == spark_url(f"file://{tmp_path}/history/") == f"file://{tmp_path}/history"
    assert spark_url("s3://bucket/console/history") == "s3a://bucket/console/history"  # Hadoop's name for S3
    assert spark_url("hdfs://namenode:8020/console/history") == "hdfs://namenode:8020/console/history"


def test_an_object_store_gets_whole_files_in_one_put_and_reads_them_back():
    """pyarrow's in-memory file system stands in for S3: nothing is renamed there."""
    store = HistoryStore("mock:///history", state=MemoryOffsets(), grace=0)
    for i in range(5):
        store.append("c", {"group_stats": group_rows("g", [DAY1 - 600_000 + i * 15_000], [i])}, poll_id=i + 1)
    filesystem, _ = open_location("mock:///history")
    names = [info.base_name for info in filesystem.get_file_info(pafs.FileSelector("history", recursive=True))]
    assert not [n for n in names if n.startswith(".")]  # no temporary names on a store without renames
    assert store.read("group_stats", "c")["lag"].to_pylist() == [0, 1, 2, 3, 4]
    assert store.compact("c", min_files=4, today=dt.date(2026, 11, 20)) == 5
    assert [p.rsplit("/", 1)[-1] for p in store.files("group_stats", "c")] == [part_name(frozenset("12345"))]
    assert (
        store.stats_inputs(["c"], [dt.date(2026, 11, 20)])
        .files["group_stats"][0]
        .startswith("mock:///history/group_stats/cluster=c/")
    )


def test_readers_choose_the_files_that_hold_each_poll_once(tmp_path):
    filesystem, base = open_location(str(tmp_path))
    rows = group_rows("g", [DAY1], [1])
    for polls, name in [({"1"}, poll_name(1)), ({"2"}, poll_name(2)), ({"3"}, poll_name(3)),
                        ({"1", "2"}, part_name(frozenset({"1", "2"}))),
                        ({"2", "3"}, part_name(frozenset({"2", "3"})))]:  # fmt: skip
        write_file(filesystem, f"{base}/{name}", rows, frozenset(polls))
    (tmp_path / "part-1795219190000-0a1b2c3d.parquet").write_bytes((tmp_path / poll_name(1)).read_bytes())
    paths = [f"{base}/{p.name}" for p in tmp_path.iterdir()]
    chosen = cover(filesystem, paths)
    a, b = f"{base}/{part_name(frozenset({'1', '2'}))}", f"{base}/{part_name(frozenset({'2', '3'}))}"
    legacy = f"{base}/part-1795219190000-0a1b2c3d.parquet"  # the previous layout's: a unit of its own
    assert sorted(chosen.chosen) == sorted([a, b, legacy])
    assert chosen.shared  # poll 2 is in both parts: readers drop its repeated rows
    assert chosen.superseded == {f"{base}/{poll_name(1)}": a, f"{base}/{poll_name(2)}": a, f"{base}/{poll_name(3)}": b}
    assert part_name(frozenset({"2", "1"})) == part_name(frozenset({"1", "2"})) != part_name(frozenset({"1", "3"}))
