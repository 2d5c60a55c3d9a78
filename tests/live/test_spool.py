"""History rows that cannot be written are spooled on the host, written later as they were
recorded, and what the spool had to drop is counted (real HistoryStore on disk; its folder
made unusable and usable again)."""

from __future__ import annotations

import pyarrow.ipc as ipc
import pytest

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


@pytest.mark.django_db
def test_each_hosts_backlog_is_shown_until_drained_even_when_another_host_polls(tmp_path, redis, settings):
    """Host b spools (its history unwritable); host a polls next with nothing spooled: b's
    backlog is still named. A spool whose host is gone is drained with `drain_spool`."""
    from django.core.management import call_command

    from consumers.live.spool import own_backlog, record_backlog
    from consumers.models import Cluster

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    settings.HISTORY_URL = str(tmp_path / "history")
    a = HistorySpool(tmp_path / "a-spool", max_polls=3)
    b = HistorySpool(tmp_path / "b-spool", max_polls=3)
    unwritable = tmp_path / "unwritable"
    unwritable.write_text("not a folder")
    b_store = HistoryStore(unwritable, state=MemoryOffsets())
    state = write_history(b, b_store, "east", T0, poll(0), own_backlog(redis, cluster.pk, b.host))
    assert record_backlog(redis, cluster.pk, b.host, state)[b.host]["pending_polls"] == 1
    a_store = HistoryStore(settings.HISTORY_URL, state=MemoryOffsets())
    state = write_history(a, a_store, "east", T0 + 15, poll(1), own_backlog(redis, cluster.pk, a.host))
    assert state is None and list(record_backlog(redis, cluster.pk, a.host, state)) == [b.host]

    call_command("drain_spool", "--dir", str(b.root), "--host", b.host)
    assert b.polls("east") == [] and record_backlog(redis, cluster.pk, a.host, None) == {}
    assert sorted(
        HistoryStore(settings.HISTORY_URL, state=MemoryOffsets()).read("group_stats", "east")["lag"].to_pylist()
    ) == [0, 1]
