"""History rows that cannot be written are spooled, written later in order, and what the spool
had to drop is counted (real HistoryStore on disk; its folder made unusable and usable again)."""

from __future__ import annotations

from consumers.live.documents import GroupDocument
from consumers.live.history import HistoryStore, history_tables
from consumers.live.spool import HistorySpool, write_history

T0 = 1_700_000_000.0


def poll(i: int) -> dict:
    return history_tables([GroupDocument(group="g", as_of=T0 + 15 * i, lag=i, online=True)])


def test_failed_writes_are_spooled_then_written_oldest_first_and_overflow_is_counted(tmp_path):
    root = tmp_path / "history"
    root.write_text("not a folder")  # the history store cannot write: every append fails
    store = HistoryStore(root, flush_rows=1, flush_seconds=0)
    spool = HistorySpool(tmp_path / "spool", max_polls=3)
    state = None
    for i in range(5):
        state = write_history(spool, store, "east", T0 + 15 * i, poll(i), state)
        assert state is not None and state["since"] == T0 and "Error" in state["error"]
    assert state["pending_polls"] == 3 and state["dropped"] == 2  # polls 0 and 1 lost, counted

    root.unlink()  # the store takes writes again
    assert write_history(spool, store, "east", T0 + 75, poll(5), state) is None
    assert spool.polls("east") == []
    store.flush("east")
    lags = store.read("group_stats", "east").sort_by("ts").column("lag").to_pylist()
    assert lags == [2, 3, 4, 5]  # the spooled polls, in order, then this one; 0 and 1 were dropped
