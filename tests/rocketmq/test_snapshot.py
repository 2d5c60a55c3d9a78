"""Cluster snapshots on the real cluster: complete, cached routes, bounded, failures per group."""

from __future__ import annotations

import pytest

from consumers.rocketmq import AdminClient, BrokerSystemError, cluster_snapshot, group_progress
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
            to_namesrv = []
            single, batch = client.remoting.call_namesrv, client.remoting.invoke_many

            async def counting_single(code, *args, **kwargs):
                to_namesrv.append(code)
                return await single(code, *args, **kwargs)

            async def counting_batch(requests, **kwargs):
                to_namesrv.extend(code for address, code, _ in requests if address == namesrv)
                return await batch(requests, **kwargs)

            client.remoting.call_namesrv = counting_single
            client.remoting.invoke_many = counting_batch
            first = await cluster_snapshot(client, running_info=False)
            first_calls = len(to_namesrv)
            await cluster_snapshot(client, running_info=False)
            return len(first.groups), first_calls, len(to_namesrv) - first_calls

    groups, first_calls, second_calls = run(read())
    assert first_calls >= groups  # one route lookup per group, plus the cluster info
    assert second_calls == 1  # only the cluster info: every route came from the cache


def test_one_groups_failure_stays_with_that_group(settled, namesrv):
    async def read():
        async with AdminClient(namesrv) as client:
            original = client.progress.consume_stats_many

            async def failing_for_one(targets, topics=None):
                answers = await original(targets, topics)
                return [
                    BrokerSystemError(1, "injected failure", address=a) if g == settled.lagging.group else answer
                    for answer, (g, a) in zip(answers, targets, strict=True)
                ]

            client.progress.consume_stats_many = failing_for_one
            return await cluster_snapshot(client, running_info=False)

    snapshot = run(read())
    failed = snapshot.groups[settled.lagging.group]
    assert {p.scope for p in failed.problems} == {"broker", "group"}
    assert failed.queues == []  # unknown, not zero
    assert snapshot.groups[settled.healthy.group].complete
    assert snapshot.groups[settled.failing.group].queues
