"""The shared last known offsets: each queue row's steps since that queue's previous row, the
state in Redis replaced only by a commit that finds what it read, and the polls written without
steps when the state cannot vouch for them."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.live.history_state import RedisOffsets, record_poll, with_steps
from tests.live.test_history import DAY1, group_rows, queue_rows


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


POLLS = [[(0, 5, 10), (1, 1, 4)], [(0, 8, 12), (1, 2, None)], [(1, 2, 6)], [(0, 20, 30), (1, 1, 6)]]


def test_each_queue_row_gets_its_steps_since_that_queues_previous_row_across_polls_and_gaps(tmp_path):
    """Worked by hand: queue 0 goes 5/10, 8/12, then is not polled, then 20/30; queue 1's
    broker offset is unknown once (the step after it spans both polls)."""
    store = HistoryStore(tmp_path, state=MemoryOffsets())
    t = [DAY1 + i * 15_000 for i in range(4)]
    for ms, rows in zip(t, POLLS, strict=True):
        store.append("c", {"queue_offsets": offsets(ms, rows)})
    rows = store.read("queue_offsets", "c")
    at = {ms: rows.filter(pc.equal(rows["ts"], pa.scalar(ms, pa.timestamp("ms", tz="UTC")))) for ms in t}
    when = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC)  # noqa: E731
    assert steps_of(at[t[0]]) == [(0, None, None, None, True), (1, None, None, None, True)]
    assert steps_of(at[t[1]]) == [(0, when(t[0]), 3, 2, True), (1, when(t[0]), 1, None, True)]
    assert steps_of(at[t[2]]) == [(1, when(t[1]), 0, 2, True)]  # 6 - 4: the last known broker offset
    assert steps_of(at[t[3]]) == [(0, when(t[1]), 12, 18, True), (1, when(t[2]), -1, 0, True)]  # queue 1 moved back
    # the same rows given at once (a backfill) get the same steps
    many = pa.concat_tables([offsets(ms, r) for ms, r in zip(t, POLLS, strict=True)])
    other = HistoryStore(tmp_path / "other", state=MemoryOffsets())
    other.append("c", {"queue_offsets": many})
    assert other.read("queue_offsets", "c").to_pylist() == rows.to_pylist()


def test_the_state_is_shared_in_redis_and_a_commit_must_find_what_it_read(redis):
    state = RedisOffsets(redis)
    assert state.read("c") is None
    stepped, table = with_steps(offsets(DAY1, POLLS[0]), None)
    assert state.commit("c", None, table, DAY1, (1,))
    seen = state.read("c")
    assert seen.offsets.equals(table) and (seen.newest, seen.recent) == (DAY1, (1,))
    assert not state.commit("c", None, table, DAY1, (1,))  # as if nothing were there: refused
    assert state.commit("c", seen, table, DAY1 + 1, (1, 2))
    assert not state.commit("c", seen, table, DAY1 + 2, (1, 2, 3))  # read before the last commit: refused
    assert RedisOffsets(redis).read("c").recent == (1, 2)  # another worker's view: the same


def poll(i: int) -> dict[str, pa.Table]:
    return {
        "queue_offsets": offsets(DAY1 + i * 15_000, POLLS[i]),
        "group_stats": group_rows("g", [DAY1 + i * 15_000], [1]),
    }


def test_a_poll_whose_previous_rows_are_unknown_is_written_without_steps():
    state = MemoryOffsets()
    recorded = record_poll(state, "c", 0, poll(0), has_history=lambda: True)
    # rows in the history but no state (Redis emptied, or the history older than the state):
    # no steps, no per-topic sums, and the group rows say so; the state starts from this poll
    assert recorded["queue_offsets"]["steps"].to_pylist() == [None, None] and "topic_polls" not in recorded
    assert recorded["group_stats"]["topic_polls"].to_pylist() == [False]
    state.confirm("c", 0)  # its rows were written
    after = record_poll(state, "c", 1, poll(1), has_history=lambda: True)
    assert steps_of(after["queue_offsets"])[0][2:] == (3, 2, True) and after["topic_polls"].num_rows == 1


class Racing(MemoryOffsets):
    """Another poll of the cluster commits right after each read (a lock that lapsed)."""

    def read(self, cluster):
        seen = super().read(cluster)
        super().commit(cluster, seen, seen.offsets, seen.newest, seen.recent + (9,))
        return seen


def test_of_two_polls_at_once_the_one_committing_second_is_written_without_steps():
    state = Racing()
    MemoryOffsets.commit(state, "c", None, with_steps(offsets(DAY1, POLLS[0]), None)[1], DAY1, (0,))
    lost = record_poll(state, "c", 1, poll(1), has_history=lambda: True)
    assert lost["queue_offsets"]["steps"].to_pylist() == [None, None]
    assert MemoryOffsets.read(state, "c").recent == (0, 9)  # the state is the other poll's


def test_a_poll_whose_predecessor_was_committed_but_never_written_is_written_without_steps(redis):
    """The worker died between committing poll 1 and writing its rows: poll 2's steps would start
    from rows nobody has (and count less); it is written without steps, and poll 3 is stepped
    from poll 2 again. Also through Redis: the pending poll is part of the shared state."""
    for state in (MemoryOffsets(), RedisOffsets(redis)):
        assert record_poll(state, "c", 0, poll(0), has_history=lambda: False) is not None
        state.confirm("c", 0)
        assert state.read("c").pending is None
        record_poll(state, "c", 1, poll(1), has_history=lambda: True)  # committed; its rows never written
        assert state.read("c").pending == 1
        state.confirm("c", 0)  # a late confirmation of an older poll changes nothing
        assert state.read("c").pending == 1
        after_crash = record_poll(state, "c", 2, poll(2), has_history=lambda: True)
        assert after_crash["queue_offsets"]["steps"].to_pylist() == [None]
        state.confirm("c", 2)
        again = record_poll(state, "c", 3, poll(3), has_history=lambda: True)
        assert steps_of(again["queue_offsets"])[1][2:] == (-1, 0, True)  # queue 1: 2/6 at poll 2 -> 1/6
