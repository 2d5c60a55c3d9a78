"""Two worker hosts, each with its own spool, polling one cluster in turn into one shared history
(synthetic polls, the real write path, the shared state in a real Redis): one host's history
cannot be written for a while, one write is retried after it had gone through, and two
compactions run at once, twice. Every poll is then in the history exactly once, and what a
reader and the statistics job are handed is what one host polling alone would have written."""

from __future__ import annotations

import datetime as dt
import random
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

from consumers.live.documents import GroupDocument, QueueRow
from consumers.live.history import SCHEMAS, HistoryStore, MemoryOffsets, RedisOffsets, history_tables
from consumers.live.history_files import cover, open_location
from consumers.live.history_rows import sort_rows
from consumers.live.spool import HistorySpool, write_history

MIDNIGHT = 1_795_219_200.0  # 2026-11-21 00:00:00 UTC
T0 = MIDNIGHT - 150  # the first ten polls the day before
POLLS = 24
DAYS = ["2026-11-20", "2026-11-21"]


def synthetic_polls(seed: int = 3) -> list[tuple[float, dict[str, pa.Table]]]:
    """Three groups of two queues, each read at its own moment of the poll; offsets move on."""
    rng = random.Random(seed)
    broker = {(g, q): 100 for g in range(3) for q in range(2)}
    consumer = dict(broker)
    polls = []
    for i in range(POLLS):
        polled_at = T0 + 15 * i
        docs = []
        for g in range(3):
            as_of = polled_at + 0.004 * g
            queues = []
            for q in range(2):
                broker[g, q] += rng.randint(0, 9)
                consumer[g, q] = min(broker[g, q], consumer[g, q] + rng.randint(0, 12))
                unknown = rng.random() < 0.1  # a consumer offset not read this poll
                queues.append(QueueRow(
                    topic="T", broker=f"broker-{'ab'[q]}", queue_id=q, retry=False, min=0, max=broker[g, q],
                    consumer=None if unknown else consumer[g, q], lag=broker[g, q] - consumer[g, q],
                    lag_seconds=1.0, lag_seconds_note=None, pull=None, last_consume_ms=None, clients=["c1"],
                    expired=False, as_of=as_of,
                ))  # fmt: skip
            docs.append(GroupDocument(group=f"g{g}", as_of=as_of, lag=0, online=True, queues=queues))
        polls.append((polled_at, history_tables(docs)))
    return polls


class Host:
    """A worker host: its own disk (the spool), the shared history through its own mount."""

    def __init__(self, base: Path, shared: Path, redis):
        base.mkdir()
        self.mount = base / "history"
        self.mount.symlink_to(shared)
        self.store = HistoryStore(str(self.mount), state=RedisOffsets(redis), grace=0)
        self.spool = HistorySpool(base / "history-spool", max_polls=100)
        self.meta = None

    def poll(self, polled_at: float, tables: dict) -> None:
        self.meta = write_history(self.spool, self.store, "c", polled_at, tables, self.meta)

    def unmount(self, broken: Path) -> None:
        self.mount.unlink()
        self.mount.symlink_to(broken)  # a file: nothing can be written under it

    def mount_again(self, shared: Path) -> None:
        self.mount.unlink()
        self.mount.symlink_to(shared)


def compact_at_once(hosts: list[Host]) -> None:
    start = threading.Barrier(len(hosts))
    errors = []

    def run(host):
        start.wait()
        try:
            host.store.compact("c", min_files=2, min_parts=4)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(h,)) for h in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def read_files(store: HistoryStore, name: str, files: list[str]) -> pa.Table:
    """What Spark reads of the files a run is handed (here with pyarrow: the same files)."""
    paths = [f.removeprefix("file://") for f in files]
    return sort_rows(ds.dataset(paths, schema=SCHEMAS[name], format="parquet").to_table())


@pytest.fixture
def shared(tmp_path):
    (tmp_path / "shared").mkdir()
    return tmp_path / "shared"


def test_two_hosts_polling_in_turn_write_every_poll_once_as_one_host_would(tmp_path, shared, redis):
    a, b = Host(tmp_path / "host-a", shared, redis), Host(tmp_path / "host-b", shared, redis)
    (tmp_path / "unmounted").write_text("not a folder")
    polls = synthetic_polls()
    turns = random.Random(5).choices([a, b], k=POLLS)
    turns[8:14] = [b, a, b, b, a, b]  # b's history unwritable for 9..12: its polls 10 and 11 spooled
    for i, ((polled_at, tables), host) in enumerate(zip(polls, turns, strict=True)):
        if i == 9:
            b.unmount(tmp_path / "unmounted")
        if i == 13:
            assert len(b.spool.polls("c")) == 2 and b.meta["pending_polls"] == 2
            b.mount_again(shared)
        if host is a and i == 5:
            # a write that went through but was reported failed: spooled, written again later
            poll_id = int(polled_at * 1000)
            recorded = a.store.record("c", poll_id, tables)
            a.store.write("c", poll_id, recorded)
            a.spool.keep("c", poll_id, recorded)
            a.store.confirm("c", poll_id, recorded)  # as write_history does once the rows are spooled
        else:
            host.poll(polled_at, tables)
        if i in (16, POLLS - 1):
            compact_at_once([a, b])
    a.poll(T0 + 15 * POLLS, {})  # a's next poll drains what it spooled
    assert a.spool.polls("c") == b.spool.polls("c") == [] and a.meta is b.meta is None
    compact_at_once([a, b])  # what the ones before left waiting for their grace is deleted

    ids = {str(int(polled_at * 1000)) for polled_at, _ in polls}
    filesystem, base = open_location(str(shared))
    single = HistoryStore(tmp_path / "single", state=MemoryOffsets())
    for polled_at, tables in polls:  # one host polling alone: the same polls in the same order
        single.append("c", tables, poll_id=int(polled_at * 1000))
    inputs = a.store.stats_inputs(["c"], [dt.date.fromisoformat(d) for d in DAYS])
    assert inputs.deduplicated and inputs.polled == {("c", d) for d in DAYS}
    for name in SCHEMAS:
        found = []
        for date in DAYS:
            folder = f"{base}/{name}/cluster=c/date={date}"
            files = [i.path for i in filesystem.get_file_info(pafs.FileSelector(folder))]
            chosen = cover(filesystem, files)
            assert chosen.chosen == sorted(files)  # nothing left waiting: every file is read
            found += [poll for path in files for poll in chosen.polls[path]]
        # every poll exactly once (none of these straddles midnight: each is in one date)
        assert sorted(found) == sorted(ids)
        expected = single.read(name, "c")
        assert b.store.read(name, "c").equals(expected)
        assert read_files(a.store, name, inputs.files[name]).equals(expected)
