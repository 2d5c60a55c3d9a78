"""Dispatching polls and the per-cluster lock: no overlap, one poll per interval."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from consumers.live import snapshots, tasks
from consumers.live.dispatch import claim_due_clusters
from consumers.live.poll import poll_cluster
from consumers.models import Cluster


@pytest.fixture
def clusters(db):
    return (
        Cluster.objects.create(name="a", namesrv_addrs="127.0.0.1:1", poll_interval=15),
        Cluster.objects.create(name="b", namesrv_addrs="127.0.0.1:2", poll_interval=30),
        Cluster.objects.create(name="off", namesrv_addrs="127.0.0.1:3", enabled=False),
    )


def test_a_cluster_is_claimed_once_per_interval(clusters, redis):
    a, b, _ = clusters
    assert claim_due_clusters(redis, now=1000.0) == [a.pk, b.pk]
    assert claim_due_clusters(redis, now=1000.5) == []  # not due again before its interval
    assert claim_due_clusters(redis, now=1014.9) == []
    assert claim_due_clusters(redis, now=1015.0) == [a.pk]
    assert claim_due_clusters(redis, now=1029.9) == []
    assert claim_due_clusters(redis, now=1030.2) == [a.pk, b.pk]


def test_the_period_does_not_drift_with_the_beat_tick(clusters, redis):
    """Beat ticks every 0.5 s, here with a jitter: over 20 polls the period stays 15 s (the
    old dispatcher re-armed a 15 s key at each claim, so every poll came on the next tick)."""
    a = clusters[0]
    claimed, now = [], 5000.0
    while len(claimed) < 21:
        if a.pk in claim_due_clusters(redis, now=now):
            claimed.append(now)
        now += 0.5 + (0.037 if len(claimed) % 3 else 0.0)
    periods = [later - earlier for earlier, later in zip(claimed, claimed[1:], strict=False)]
    assert abs(sum(periods) / len(periods) - 15.0) <= 0.05
    assert all(abs(p - 15.0) <= 0.6 for p in periods), periods


def test_a_cluster_that_fell_behind_is_polled_once_not_in_a_burst(clusters, redis):
    a = clusters[0]
    assert a.pk in claim_due_clusters(redis, now=1000.0)
    assert a.pk in claim_due_clusters(redis, now=1100.0)  # the worker was away for 100 s
    assert a.pk not in claim_due_clusters(redis, now=1100.5)
    assert a.pk not in claim_due_clusters(redis, now=1114.9)
    assert a.pk in claim_due_clusters(redis, now=1115.0)


def test_the_dispatcher_enqueues_the_due_polls_with_limits_that_grow_with_the_cluster(
    clusters, redis, monkeypatch, settings
):
    """A poll's deadline is ROCKETMQ_POLL_DEADLINE, or 1 s a thousand groups of its last poll when
    longer: a 30,000-group cluster gets 30 s to read and its task limits follow."""
    from consumers.live.documents import ClusterMeta

    settings.ROCKETMQ_POLL_DEADLINE, settings.ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = 12, 1.0
    big = ClusterMeta(cluster_id=clusters[1].pk, name=clusters[1].name, polled_at=1.0, duration=9.0, status="ok",
                      groups=30_000)  # fmt: skip
    snapshots.write_meta(redis, clusters[1].pk, big)
    queued = []
    monkeypatch.setattr(tasks.poll_cluster, "apply_async", lambda args, **limits: queued.append((args, limits)))
    assert tasks.dispatch_polls() == [clusters[0].pk, clusters[1].pk]
    assert queued == [
        ((clusters[0].pk,), {"soft_time_limit": 42.0, "time_limit": 72.0}),  # never polled: 12 s
        ((clusters[1].pk,), {"soft_time_limit": 60.0, "time_limit": 90.0}),
    ]


def test_a_poll_reads_within_the_deadline_of_its_clusters_size(clusters, redis, monkeypatch, settings, history_dir):
    from consumers.live import poll as poll_module
    from consumers.live.documents import ClusterMeta

    settings.ROCKETMQ_POLL_DEADLINE, settings.ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = 12, 1.0
    given = []

    def reading(cluster, work, *, seconds):
        given.append(seconds)
        raise poll_module.RocketMQError("stop here")

    monkeypatch.setattr(poll_module, "run_on_cluster", reading)
    for groups, expected in ((None, 12.0), (3_000, 12.0), (25_000, 25.0)):
        if groups is not None:
            meta = ClusterMeta(cluster_id=clusters[0].pk, name="a", polled_at=1.0, duration=1.0, status="ok",
                               groups=groups)  # fmt: skip
            snapshots.write_meta(redis, clusters[0].pk, meta)
        poll_cluster(clusters[0])
        assert given[-1] == expected


def test_staleness_allows_a_large_clusters_longer_poll(db, settings):
    from consumers.live.config import stale_after

    settings.ROCKETMQ_POLL_DEADLINE, settings.ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = 12, 1.0
    settings.STALE_MARGIN_SECONDS = 5
    assert stale_after(15) == stale_after(15, 8_000) == 15 + 12 + 5
    assert stale_after(15, 40_000) == 15 + 40 + 5


def test_a_poll_does_not_start_while_another_runs(clusters, redis):
    redis.set(snapshots.key(clusters[0].pk, "lock"), "someone-else")
    assert poll_cluster(clusters[0]).status == "skipped"


def test_a_poll_of_an_unreachable_cluster_fails_cleanly_and_releases_its_lock(clusters, redis, history_dir, settings):
    settings.ROCKETMQ_POLL_DEADLINE = 2
    result = poll_cluster(clusters[0])
    assert result.status == "failed" and "no name server answered" in result.error
    assert redis.get(snapshots.key(clusters[0].pk, "lock")) is None
    meta = snapshots.read_meta(redis, clusters[0].pk)
    assert meta.status == "failed" and meta.last_success_at is None


def test_a_cluster_that_never_answers_holds_a_worker_no_longer_than_the_deadline(db, redis, history_dir, settings):
    # a name server that accepts connections and then says nothing
    silent = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.append(silent.accept()), daemon=True).start()
    settings.ROCKETMQ_POLL_DEADLINE = 2
    settings.ROCKETMQ_REQUEST_TIMEOUT = 30
    cluster = Cluster.objects.create(name="silent", namesrv_addrs=f"127.0.0.1:{silent.getsockname()[1]}")
    started = time.monotonic()
    result = poll_cluster(cluster)
    assert result.status == "failed" and "DeadlineExceeded" in result.error
    assert 1.9 < time.monotonic() - started < 4  # the worker is free again for other clusters
    silent.close()


def test_the_poll_task_ignores_clusters_that_are_gone_or_disabled(clusters, redis):
    assert tasks.poll_cluster.run(clusters[2].pk) == "gone"
    assert tasks.poll_cluster.run(999_999) == "gone"
