"""The history on an object store: HISTORY_URL s3://… against a local S3 (moto's server on
127.0.0.1), written by two stores as two hosts would, read once per poll, compacted, named for
Spark, and spooled while the store is down, then drained."""

from __future__ import annotations

import datetime as dt

import pyarrow.fs as pafs
import pytest
from moto.server import ThreadedMotoServer

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.live.spool import HistorySpool, write_history
from devstack.processes import free_port
from tests.live.test_history import DAY1, group_rows, queue_rows

BUCKET = "console-history"


def make_bucket(port: int) -> None:
    """What an operator does once: the console itself never creates a bucket."""
    admin = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", region="us-east-1",
                              allow_bucket_creation=True)  # fmt: skip
    admin.create_dir(BUCKET)


@pytest.fixture(scope="module")
def s3():
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield port, server
    server.stop()


@pytest.fixture
def url(s3, monkeypatch, request):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "console")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "console")
    prefix = request.node.name[-40:]
    location = f"s3://{BUCKET}/{prefix}?endpoint_override=127.0.0.1:{s3[0]}&scheme=http&region=us-east-1"
    make_bucket(s3[0])
    return location


def poll(i: int) -> dict:
    ts = DAY1 + i * 15_000
    return {"queue_offsets": queue_rows("g", ts, 2), "group_stats": group_rows("g", [ts], [i])}


def test_two_hosts_write_one_history_on_s3_each_poll_read_once_after_compaction(url):
    shared = MemoryOffsets()  # the Redis state both hosts share, here in one process
    a, b = HistoryStore(url, state=shared, grace=0), HistoryStore(url, state=shared, grace=0)
    for i in range(6):
        (a if i % 2 else b).append("c", poll(i), poll_id=DAY1 + i * 15_000)
    b.append("c", poll(3), poll_id=DAY1 + 3 * 15_000)  # a poll given again: not written twice
    assert a.read("group_stats", "c")["lag"].to_pylist() == [0, 1, 2, 3, 4, 5]
    assert a.compact("c", today=dt.date(2030, 1, 1)) > 0
    kinds = [(p.rsplit("/", 2)[-2], p.rsplit("/", 1)[-1][:5]) for p in a.files("group_stats", "c")]
    assert kinds == [("date=2026-11-20", "poll-"), ("date=2026-11-21", "part-")]  # DAY1 is 23:59:50
    assert b.read("group_stats", "c")["lag"].to_pylist() == [0, 1, 2, 3, 4, 5]
    inputs = a.stats_inputs(["c"], [dt.date(2026, 11, 20), dt.date(2026, 11, 21)])
    assert len(inputs.files["group_stats"]) == 2 and inputs.deduplicated
    assert inputs.root.startswith(f"s3a://{BUCKET}/") and "?" not in inputs.root  # Spark's name, its options apart
    assert all(f.startswith(inputs.root + "/group_stats/cluster=c/date=2026-11-2") for f in inputs.files["group_stats"])


def test_polls_spooled_while_the_store_is_down_are_written_when_it_is_back(url, s3, tmp_path):
    store = HistoryStore(url, state=MemoryOffsets())
    spool = HistorySpool(tmp_path / "spool", max_polls=10)
    assert write_history(spool, store, "c", DAY1 / 1000, poll(0), None) is None
    port, server = s3
    server.stop()
    try:
        state = write_history(spool, store, "c", DAY1 / 1000 + 15, poll(1), None)
        assert state["pending_polls"] == 1 and state["error"]
    finally:
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        s3[1].__dict__.update(server.__dict__)  # the module's fixture stops this one
    # the store is back (with what it held): the next poll drains the spool first
    assert write_history(spool, store, "c", DAY1 / 1000 + 30, poll(2), state) is None
    assert store.read("group_stats", "c")["lag"].to_pylist() == [0, 1, 2] and spool.polls("c") == []
