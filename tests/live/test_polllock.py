"""The heartbeat poll lock (real Redis): held while its holder beats, gone soon after it stops,
and a skipped poll says behind whom."""

from __future__ import annotations

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
