"""Cluster snapshots on the real cluster: complete, cached routes, bounded, failures per group."""

from __future__ import annotations

import asyncio

import pytest

from consumers.rocketmq import AdminClient, BrokerSystemError, cluster_snapshot, group_progress
from consumers.rocketmq import snapshot as snapshot_module
from tests.conftest import run

pytestmark = pytest.mark.broker


def test_a_snapshot_holds_every_group_as_group_progress_reads_it(settled, namesrv):
    async def read():
        async with AdminClient(namesrv) as client:
            snapshot = await cluster_snapshot(client)
            singles = {c.group: await group_progress(client, c.group) for c in settled.all}
            return snapshot, singles

    snapshot, singles = run(read())
    assert {c.group for c in settled.all} <= set(snapshot.groups)
    assert not any(g.startswith(("TOOLS_CONSUMER", "CID_")) for g in snapshot.groups)
    for name, single in singles.items():
        progress = snapshot.groups[name]
        assert progress.complete, progress.problems
        assert [(q.queue, q.broker_offset, q.consumer_offset) for q in progress.queues] == [
            (q.queue, q.broker_offset, q.consumer_offset) for q in single.queues
        ]
    assert snapshot.groups[settled.healthy.group].online is True
    assert snapshot.groups[settled.lagging.group].online is False
    assert {b.runtime.version for b in snapshot.brokers.values()} == {"V5_3_3"}


def test_routes_are_cached_between_snapshots(settled, namesrv):
    async def read():
        async with AdminClient(namesrv) as client:
            calls = []
            original = client.remoting.call_namesrv

            async def counting(code, *args, **kwargs):
                calls.append(code)
                return await original(code, *args, **kwargs)

            client.remoting.call_namesrv = counting
            first = await cluster_snapshot(client, running_info=False)
            first_calls = len(calls)
            await cluster_snapshot(client, running_info=False)
            return len(first.groups), first_calls, len(calls) - first_calls

    groups, first_calls, second_calls = run(read())
    assert first_calls >= groups  # one route lookup per group, plus the cluster info
    assert second_calls == 1  # only the cluster info: every route came from the cache


def test_group_fetches_are_bounded_and_one_failure_stays_with_its_group(settled, namesrv, monkeypatch):
    running = 0
    peak = 0
    original = snapshot_module.group_progress

    async def tracked(client, group, **kwargs):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            await asyncio.sleep(0.01)
            if group == settled.lagging.group:
                raise BrokerSystemError(1, "injected failure", address="127.0.0.1:1")
            return await original(client, group, **kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(snapshot_module, "group_progress", tracked)

    async def read():
        async with AdminClient(namesrv) as client:
            return await cluster_snapshot(client, concurrency=2, running_info=False)

    snapshot = run(read())
    assert peak == 2
    failed = snapshot.groups[settled.lagging.group]
    assert [(p.scope, p.error_type) for p in failed.problems] == [("group", "BrokerSystemError")]
    assert failed.queues == []  # unknown, not zero
    assert snapshot.groups[settled.healthy.group].complete
