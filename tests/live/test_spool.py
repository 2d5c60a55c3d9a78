"""History rows that cannot be written are spooled on the host, written later as they were
recorded, and what the spool had to drop is counted (real HistoryStore on disk; its folder
made unusable and usable again)."""

from __future__ import annotations

import pyarrow.ipc as ipc

from consumers.live.documents import GroupDocument, QueueRow
from consumers.live.history import HistoryStore, MemoryOffsets, history_tables
from consumers.live.spool import HistorySpool, write_history

T0 = 1_700_000_000.0


def poll(i: int) -> dict:
    queue = QueueRow(topic="T", broker="b", queue_id=0, retry=False, min=0, max=10 * i, consumer=9 * i, lag=i,
                     lag_seconds=1.0, lag_seconds_note=None, pull=None, last_consume_ms=None, clients=[], expired=False,
                     as_of=T0 + 15 * i)  # fmt: skip
    return history_tables([GroupDocument(group="g", as_of=T0 + 15 * i, lag=i, online=True, queues=[queue])])


def test_failed_writes_are_spooled_then_written_as_recorded_and_overflow_is_counted(tmp_path):
    root = tmp_path / "history"
    root.write_text("not a folder")  # the history store cannot write: every write fails
    store = HistoryStore(root, state=MemoryOffsets())
    spool = HistorySpool(tmp_path / "spool", max_polls=3)
    state = None
    for i in range(5):
        state = write_history(spool, store, "east", T0 + 15 * i, poll(i), state)
        assert state is not None and state["since"] == T0 and "Error" in state["error"]
    assert state["pending_polls"] == 3 and state["dropped"] == 2  # polls 0 and 1 lost, counted
    assert [p.name for p in spool.polls("east")] == [str(int((T0 + 15 * i) * 1000)) for i in (2, 3, 4)]

    root.unlink()  # the store takes writes again
    assert write_history(spool, store, "east", T0 + 75, poll(5), state) is None
    assert spool.polls("east") == []
    groups = store.read("group_stats", "east")
    assert groups["lag"].to_pylist() == [2, 3, 4, 5]  # the spooled polls, then this one; 0 and 1 were dropped
    # each stepped when it was polled, from the poll before it (dropped or not): 9 consumed a poll
    assert store.read("queue_offsets", "east")["consumed_step"].to_pylist() == [9, 9, 9, 9]
    assert store.read("topic_polls", "east")["consumed"].to_pylist() == [9, 9, 9, 9]


def test_a_poll_spooled_by_the_previous_version_is_written_without_steps(tmp_path):
    store = HistoryStore(tmp_path / "history", state=MemoryOffsets())
    spool = HistorySpool(tmp_path / "spool", max_polls=3)
    folder = tmp_path / "spool" / "east" / f"{T0:017.3f}"
    folder.mkdir(parents=True)
    for name, table in poll(1).items():  # as it spooled them: the rows as polled, not recorded
        with ipc.new_file(folder / f"{name}.arrow", table.schema) as writer:
            writer.write_table(table)
    assert spool.drain("east", store) == 1
    assert store.read("queue_offsets", "east")["steps"].to_pylist() == [None]
    assert store.read("group_stats", "east")["topic_polls"].to_pylist() == [False]
