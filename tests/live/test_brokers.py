"""Known brokers across polls, on snapshots made here: a broker the name server stops listing is
missing since the first poll that did not see it, not since it was last read. The real broker
killed is in test_poll_faults.py."""

from __future__ import annotations

import datetime as dt

import pytest

from consumers.live.brokers import describe, reconcile
from consumers.models import Cluster, KnownBroker
from consumers.rocketmq import ClusterSnapshot, Problem
from consumers.rocketmq.models import ClusterInfo
from consumers.rocketmq.snapshot import BrokerStatus

T0 = 1_795_000_000.0  # 2026-11-18 11:06:40 UTC


def polled(at: float, *names: str, failing: tuple[str, ...] = ()) -> ClusterSnapshot:
    brokers = {
        n: BrokerStatus(n, f"10.0.0.{i}:10911", error=Problem("broker", n, "timeout", "x") if n in failing else None)
        for i, n in enumerate(names)
    }
    return ClusterSnapshot(at, 0.1, ClusterInfo(brokers={}, clusters={"C": list(names)}), brokers, {})


@pytest.fixture
def east(db):
    return Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")


def test_missing_since_is_the_first_poll_that_did_not_see_it(east):
    reconcile(east, polled(T0, "a", "b"), now=T0)  # b read
    reconcile(east, polled(T0 + 15, "a", "b", failing=("b",)), now=T0 + 15)  # listed, not answering
    report = reconcile(east, polled(T0 + 30, "a"), now=T0 + 30)  # gone from the name server
    missing = next(b for b in report.states if b.name == "b")
    assert (missing.state, missing.missing_since, missing.last_seen_at) == ("missing", T0 + 30, T0)
    later = reconcile(east, polled(T0 + 45, "a"), now=T0 + 45)  # still missing: since the same poll
    assert next(b for b in later.states if b.name == "b").missing_since == T0 + 30
    assert describe(missing) == (
        "missing since 2026-11-18 11:07:10 UTC (not in the name server; last read 2026-11-18 11:06:40 UTC)"
    )
    row = KnownBroker.objects.get(name="b")
    assert row.missing_since == dt.datetime.fromtimestamp(T0 + 30, dt.UTC)
    back = reconcile(east, polled(T0 + 60, "a", "b"), now=T0 + 60)  # listed again: not missing
    assert {b.name: b.state for b in back.states} == {"a": "ok", "b": "ok"}
    assert KnownBroker.objects.get(name="b").missing_since is None
