"""A restarted proxy: its gRPC groups are unknown, not STOPPED, for the grace window (the SDK
clients register again at their next heartbeat); STOPPED after it if still nobody is there."""

from __future__ import annotations

import pytest

from consumers.live import building, proxy_grace
from consumers.live.config import default_thresholds
from consumers.live.documents import ProxyState, proxy_states
from consumers.live.health import evaluate
from consumers.rocketmq.proxies import ProxyStatus
from consumers.rocketmq.snapshot import ClusterSnapshot
from tests.live.test_building import progress, q

PROXY = "127.0.0.1:8081"


def _states(previous, error=None, groups=0, at=1000.0):
    return proxy_states({PROXY: ProxyStatus(PROXY, error, groups)}, previous, at)


def test_a_proxy_answering_after_failing_or_with_its_client_table_emptied_restarted():
    up = _states([], groups=3, at=1000.0)
    assert up[0].restarted_at is None  # first sight: nothing to compare with
    steady = _states(up, groups=3, at=1015.0)
    assert steady[0].restarted_at is None
    failing = _states(steady, error="ConnectError: refused", at=1030.0)
    back = _states(failing, groups=0, at=1045.0)
    assert back[0].restarted_at == 1045.0
    emptied = _states(steady, groups=0, at=1045.0)  # restarted between two polls
    assert emptied[0].restarted_at == 1045.0
    later = _states(emptied, groups=0, at=1060.0)  # still no client: the same restart, not a new one
    assert later[0].restarted_at == 1045.0
    assert _states(later, groups=2, at=1075.0)[0].restarted_at == 1045.0


@pytest.mark.parametrize(("age", "within"), [(0, True), (89, True), (90, False), (300, False)])
def test_the_grace_window(settings, age, within):
    settings.ROCKETMQ_PROXY_RESTART_GRACE = 90
    state = ProxyState(PROXY, "ok", None, 0, 1000.0 + age, None, restarted_at=1000.0)
    assert (PROXY in proxy_grace.restarting([state], 1000.0 + age)) is within


def _snapshot(**groups):
    return ClusterSnapshot(fetched_at=0, duration=0, cluster_info=None, brokers={}, groups=groups)


def test_groups_that_had_proxy_clients_are_unknown_in_the_window_and_stopped_after_it(settings):
    settings.ROCKETMQ_PROXY_RESTART_GRACE = 90
    snapshot = _snapshot(grpc=progress(q("a", 0)), classic=progress(q("a", 1)), back=progress(q("a", 2), online=True))
    held = proxy_grace.hold(snapshot, frozenset({"grpc", "back"}), {PROXY: 12.4})
    assert held == ["grpc"]  # "classic" had no proxy client; "back" has its clients again
    assert snapshot.groups["classic"].online is False and snapshot.groups["back"].online is True
    doc = building.build_document(snapshot.groups["grpc"], lag_times={}, dlq_count=0, previous=None)
    doc.set_health(evaluate([building.sample(doc, 2000.0)], default_thresholds()))
    assert doc.clients is None and f"proxy {PROXY} restarted 12 s ago" in doc.clients_note
    assert doc.health["state"] != "STOPPED"
    # after the window: nothing is held, and a group with lag and no client is STOPPED
    after = _snapshot(grpc=progress(q("a", 0)))
    assert proxy_grace.hold(after, frozenset({"grpc"}), {}) == []
    stopped = building.build_document(after.groups["grpc"], lag_times={}, dlq_count=0, previous=None)
    stopped.set_health(evaluate([building.sample(stopped, 2000.0)], default_thresholds()))
    assert stopped.health["state"] == "STOPPED"
