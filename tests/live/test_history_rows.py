"""A poll's rows: the per-topic sums of its stepped queue rows, the same rows without steps,
and each row once when files share polls."""

from __future__ import annotations

import pyarrow as pa

from consumers.live.history import QUEUE_OFFSETS, HistoryStore, MemoryOffsets
from consumers.live.history_rows import dedupe_rows, unstepped
from tests.live.test_history import DAY1, DAY2, group_rows, queue_rows


def test_each_polls_topic_rows_are_the_sums_of_its_stepped_queue_rows_worked_by_hand(tmp_path):
    store = HistoryStore(tmp_path, state=MemoryOffsets())
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


def test_rows_without_steps_keep_their_offsets_and_say_they_have_no_topic_rows():
    queues = queue_rows("g", DAY1, 2)
    queues = queues.set_column(queues.schema.get_field_index("steps"), "steps", pa.array([True, True]))
    tables = {"queue_offsets": queues, "group_stats": group_rows("g", [DAY1], [3]), "topic_polls": pa.table({})}
    plain = unstepped(tables)
    assert sorted(plain) == ["group_stats", "queue_offsets"]
    assert plain["queue_offsets"]["steps"].to_pylist() == [None, None]
    assert plain["queue_offsets"]["consumer_offset"].to_pylist() == [7, 7]
    assert plain["group_stats"]["topic_polls"].to_pylist() == [False]


def test_repeated_rows_are_dropped_keeping_the_first_in_the_order_read():
    a, b = group_rows("a", [DAY1, DAY2], [1, 2]), group_rows("b", [DAY1], [9])
    table = dedupe_rows(pa.concat_tables([a, b, a.slice(1)]), "group_stats")
    assert list(zip(table["group"].to_pylist(), table["lag"].to_pylist(), strict=True)) == [
        ("a", 1),
        ("a", 2),
        ("b", 9),
    ]
