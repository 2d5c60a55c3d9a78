"""The heartbeat poll lock (real Redis): held while its holder beats, gone soon after it stops,
and a skipped poll says behind whom."""

from __future__ import annotations

import threading
import time

from consumers.live import snapshots
from consumers.live.documents import ClusterMeta
from consumers.live.poll import poll_cluster
from consumers.live.polllock import PollLock
from consumers.live.selectors import freshness
from consumers.models import Cluster


def test_a_live_holder_keeps_the_lock_past_its_ttl_and_a_dead_one_loses_it_within_it(redis):
    alive = PollLock(redis, "rmqc:test:lock", ttl=1.2)
    assert alive.acquire()
    time.sleep(2.5)  # twice the TTL: renewed by the heartbeat
    assert not PollLock(redis, "rmqc:test:lock", ttl=1.2).acquire()
    alive._stop.set()  # the worker dies: no release, no more beats
    alive._thread.join()
    started = time.monotonic()
    while not PollLock(redis, "rmqc:test:lock", ttl=1.2).acquire():
        assert time.monotonic() - started < 2.0, "the dead holder's lock outlived its TTL"
        time.sleep(0.1)


def test_a_skipped_poll_says_who_holds_the_lock_and_stale_data_says_polls_are_skipped(db, redis, settings):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    snapshots.write_meta(redis, cluster.pk, ClusterMeta(cluster.pk, "east", time.time() - 120, 0.1, "ok"))
    holder = PollLock(redis, snapshots.key(cluster.pk, "lock"))
    assert holder.acquire()
    try:
        result = poll_cluster(cluster)
    finally:
        holder.release()
    assert result.status == "skipped" and "another poll of this cluster is running" in result.error
    assert holder.value.split("|")[1] in result.error  # the holder's host:pid
    meta = snapshots.read_meta(redis, cluster.pk)
    assert meta.skipped and meta.skipped["why"] == result.error
    fresh = freshness(time.time() - 120, None, cluster=cluster, meta=meta, now=time.time())
    assert fresh.stale and "polls skipped for" in fresh.reason and "another poll" in fresh.reason


def test_a_poll_waits_for_a_silent_holders_lock_to_lapse_and_runs_late_rather_than_skipping(db, redis, settings):
    """A worker killed mid-poll: its lock's last beat was 12 s ago (3 s of 15 left) and no other
    will come. The next poll waits those 3 s and runs, instead of leaving the cluster unpolled
    for another interval."""
    settings.ROCKETMQ_POLL_DEADLINE = 2
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    redis.set(snapshots.key(cluster.pk, "lock"), f"x|dead-host:1|{time.time() - 20:.3f}", px=3000)
    started = time.monotonic()
    result = poll_cluster(cluster)
    waited = time.monotonic() - started
    assert result.status == "failed" and "no name server answered" in result.error  # it ran: not skipped
    assert 2.5 <= waited < 3 + 2 + 3, waited  # the lock's 3 s, then the poll's own (failing) try


def test_a_holder_that_beats_late_but_beats_is_not_taken_over(redis):
    """A holder whose beat is late (under two thirds of the TTL left) and then renews: the
    waiting poll sees the renewal and gives up, as it does for any live poll."""
    redis.set("rmqc:test:late", "x|slow-host:1|0", px=2000)  # of a 6 s TTL: a beat is late
    renew = threading.Timer(0.6, lambda: redis.pexpire("rmqc:test:late", 6000))
    renew.start()
    started = time.monotonic()
    try:
        assert not PollLock(redis, "rmqc:test:late", ttl=6.0).acquire(wait_for_silent_holder=True)
    finally:
        renew.join()
    assert 0.5 < time.monotonic() - started < 2.0  # waited, saw the renewal, gave up before the lapse
    assert redis.get("rmqc:test:late") == b"x|slow-host:1|0"
