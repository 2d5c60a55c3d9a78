"""A small history worked out by hand: the rows, and what the statistics must say about them.

Cluster c1 polls every 60 s (a poll is one minute), default lag SLO 30 s; g2's SLO is 100 s.
Day D = 2026-11-20; t0 is the day before (the look-back), t6 the day after (not computed).

g1 topic T, queue 0: consumer/broker offsets 100/110, 105/112, 90/115 (reset backwards),
95/115, unknown/120, 110/121. Queue 1: 50/50, 50/51, 51/51, missing at t3, 51/53, 53/53.
%RETRY%g1 queue 0 max offset: 0, 3, 3, 3, 4, 4. No polls at 00:03 and 00:04 (a gap).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from consumers.live.history import GROUP_STATS, QUEUE_OFFSETS

DAY = dt.date(2026, 11, 20)


def at(day_offset: int, hour: int, minute: int) -> dt.datetime:
    return dt.datetime.combine(DAY + dt.timedelta(days=day_offset), dt.time(hour, minute), tzinfo=dt.UTC)


T0, T1, T2, T3 = at(-1, 23, 59), at(0, 0, 0), at(0, 0, 1), at(0, 0, 2)
T4, T5, T6 = at(0, 0, 5), at(0, 1, 0), at(1, 0, 0)

# (ts, group, topic, queue, retry, consumer, broker, lag, lag_seconds)
QUEUES = [
    (T0, "g1", "T", 0, False, 100, 110, 10, 5.0),
    (T1, "g1", "T", 0, False, 105, 112, 7, 4.0),
    (T2, "g1", "T", 0, False, 90, 115, 25, 50.0),
    (T3, "g1", "T", 0, False, 95, 115, 20, 40.0),
    (T4, "g1", "T", 0, False, None, 120, None, None),
    (T5, "g1", "T", 0, False, 110, 121, 11, 2.0),
    (T6, "g1", "T", 0, False, 500, 600, 100, 9.0),
    (T0, "g1", "T", 1, False, 50, 50, 0, 0.0),
    (T1, "g1", "T", 1, False, 50, 51, 1, 1.0),
    (T2, "g1", "T", 1, False, 51, 51, 0, 0.0),
    (T4, "g1", "T", 1, False, 51, 53, 2, 3.0),
    (T5, "g1", "T", 1, False, 53, 53, 0, 0.0),
    (T0, "g1", "%RETRY%g1", 0, True, 0, 0, 0, 0.0),
    (T1, "g1", "%RETRY%g1", 0, True, 0, 3, 3, 1.0),
    (T2, "g1", "%RETRY%g1", 0, True, 3, 3, 0, 0.0),
    (T3, "g1", "%RETRY%g1", 0, True, 3, 3, 0, 0.0),
    (T4, "g1", "%RETRY%g1", 0, True, 3, 4, 1, 1.0),
    (T5, "g1", "%RETRY%g1", 0, True, 4, 4, 0, 0.0),
    (T1, "g2", "T", 0, False, 10, 10, 0, 0.0),
    (T2, "g2", "T", 0, False, 20, 30, 10, 80.0),
]

# (ts, group, lag, lag_seconds_max, dlq_count, health)
GROUPS = [
    (T0, "g1", 10, 5.0, 0, "OK"),
    (T1, "g1", 8, 4.0, 0, "OK"),
    (T2, "g1", 25, 50.0, 2, "FALLING_BEHIND"),
    (T3, "g1", None, None, 2, "FALLING_BEHIND"),
    (T4, "g1", None, None, 1, "STALLED"),
    (T5, "g1", 11, 2.0, 4, "OK"),
    (T6, "g1", 100, 9.0, 9, "STALLED"),
    (T1, "g2", 0, 0.0, None, "OK"),
    (T2, "g2", 10, 80.0, None, "OK"),
]

CLUSTERS = [
    {"cluster": "c1", "interval_seconds": 60, "slo_seconds": 30.0},
    {"cluster": "c2", "interval_seconds": 15, "slo_seconds": 30.0},  # never polled
]
SLO_OVERRIDES = [{"cluster": "c1", "group": "g2", "slo_seconds": 100.0}]


def history_tables() -> dict[str, pa.Table]:
    queue_rows = [
        {
            "ts": ts,
            "group": group,
            "topic": topic,
            "broker": "b1",
            "queue_id": queue,
            "retry": retry,
            "broker_offset": broker,
            "consumer_offset": consumer,
            "min_offset": 0,
            "lag": lag,
            "lag_seconds": seconds,
            "last_consume_ms": None,
            "client_id": None,
        }
        for ts, group, topic, queue, retry, consumer, broker, lag, seconds in QUEUES
    ]
    group_rows = [
        {
            "ts": ts,
            "group": group,
            "online": True,
            "clients": 1,
            "lag": lag,
            "retry_lag": 0,
            "lag_seconds_max": seconds,
            "consume_tps": None,
            "dlq_count": dlq,
            "health": health,
            "complete": lag is not None,
            "topic_polls": True,  # as the poller writes them: HistoryStore.append sums the topic polls
        }
        for ts, group, lag, seconds, dlq, health in GROUPS
    ]
    return {
        "queue_offsets": pa.Table.from_pylist(queue_rows, schema=QUEUE_OFFSETS),
        "group_stats": pa.Table.from_pylist(group_rows, schema=GROUP_STATS),
    }
