"""The DLQ overview's arrivals: every group's from one read of the poll history."""

from __future__ import annotations

import time

import pyarrow as pa

from consumers.dlq.selectors import arrivals
from consumers.live.config import history_store
from consumers.live.history import GROUP_STATS, HistoryStore
from consumers.models import Cluster


def dlq_rows(group: str, points: list[tuple[float, int | None]]) -> pa.Table:
    """Group rows at (seconds ago, DLQ count); the other columns do not matter here."""
    now, n = time.time(), len(points)
    return pa.Table.from_pydict(
        {"ts": [int((now - ago) * 1000) for ago, _ in points], "group": [group] * n, "online": [True] * n,
         "clients": [1] * n, "lag": [0] * n, "retry_lag": [0] * n, "lag_seconds_max": [None] * n,
         "consume_tps": [None] * n, "dlq_count": [count for _, count in points], "health": ["OK"] * n,
         "complete": [True] * n, "topic_polls": [True] * n},
        schema=GROUP_STATS,
    )  # fmt: skip


def test_arrivals_of_several_groups_come_from_one_read_each_its_own(db, history_dir, monkeypatch):
    cluster = Cluster.objects.create(name="c", namesrv_addrs="127.0.0.1:1")
    store = history_store()
    # orders: 2 a day ago (outside), 10 at 23 h, 14 at 2 h, 15 at 61 min, 20 now (an unread poll between)
    store.append("c", {"group_stats": dlq_rows("orders", [(90000, 2), (82800, 10), (7200, 14), (3660, 15),
                                                          (60, None), (0, 20)])})  # fmt: skip
    # payments: one poll only, so no rate yet; audit: not asked, its rows must not count for anyone
    store.append("c", {"group_stats": dlq_rows("payments", [(30, 4)])})
    store.append("c", {"group_stats": dlq_rows("audit", [(7000, 0), (0, 500)])})
    reads, real = [], HistoryStore.read

    def counted(self, *args, **kwargs):
        reads.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HistoryStore, "read", counted)
    found = arrivals(cluster, ["orders", "payments", "silent"])
    assert found == {
        "orders": {"hour": 20 - 15, "day": 20 - 10},
        "payments": {"hour": None, "day": None},
        "silent": {"hour": None, "day": None},
    }
    assert len(reads) == 1
