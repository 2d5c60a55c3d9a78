"""The DLQ overview with many groups holding dead letters: each group's DLQ read from the
brokers (its queues, the store times of its oldest and newest dead letter) and its arrivals
from the poll history, as the page reads them, against a baseline of the same reads done one
group after another with one history read per group (how the page read them before), in the
same run on the same cluster.

    python -m bench.bench_dlq_overview [--groups 1000] [--dlq-groups 300] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from bench.common import prepare_groups, start_cluster
from bench.django_env import setup_django


async def _fill_dlqs(namesrv: str, groups: list[str], messages: int) -> None:
    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.codes import dlq_topic
    from consumers.rocketmq.models import MessageQueue, TopicConfig

    async with AdminClient(namesrv, request_timeout=30) as client:
        masters = (await client.topology.cluster_info()).masters()
        broker = next(iter(masters))
        limit = asyncio.Semaphore(32)

        async def one(group: str) -> None:
            async with limit:
                topic = dlq_topic(group)
                await client.actions.create_or_update_topic(TopicConfig(topic, 1, 1), [masters[broker]])
                for i in range(messages):
                    await client.actions.send_message(topic, f"dead-{i}".encode(), queue=MessageQueue(topic, broker, 0))

        await asyncio.gather(*(one(g) for g in groups))


def _baseline(cluster, groups: list[str]) -> dict:
    """The same reads, one group after another, one history read per group."""
    from consumers.clusters.connect import run_on_cluster
    from consumers.dlq import selectors
    from consumers.dlq.browse import dlq_queues

    async def read(client):
        found = {}
        for group in groups:
            queues = await dlq_queues(client, group)
            found[group] = (queues, await selectors._arrival_times(client, group, queues))
        return found

    found = run_on_cluster(cluster, read)
    return {group: (found[group], selectors.arrivals(cluster, [group])[group]) for group in groups}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--dlq-groups", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    _, redis = setup_django()
    from consumers.dlq import selectors
    from consumers.jobs.redis_client import get_redis
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster

    cluster_process = start_cluster()
    try:
        groups = prepare_groups(cluster_process, args.groups)
        dead = groups[: args.dlq_groups]
        started = time.monotonic()
        asyncio.run(_fill_dlqs(cluster_process.namesrv_addr, dead, 3))
        print(f"set-up: {len(dead)} DLQs of 3 dead letters in {time.monotonic() - started:.1f} s")
        cluster = Cluster.objects.create(name="bench", namesrv_addrs=cluster_process.namesrv_addr)
        for _ in range(3):  # the history holds a few polls of each DLQ's size
            assert poll_cluster(cluster).status == "ok"
        page, base = [], []
        for _ in range(args.runs):
            started = time.monotonic()
            rows = selectors.overview(get_redis(), [cluster])
            page.append(time.monotonic() - started)
            started = time.monotonic()
            expected = _baseline(cluster, dead)
            base.append(time.monotonic() - started)
        assert len(rows) == len(dead) and all(r["count"] == 3 for r in rows), rows[:3]
        for row in rows:  # the same answers as the baseline's
            (queues, times), came = expected[row["group"]]
            assert (row["queues"], (row["oldest_ms"], row["newest_ms"]), row["arrivals"]) == (queues, times, came)
    finally:
        cluster_process.stop()
        redis.stop()
    print(f"\nDLQ overview, {len(dead)} groups with dead letters among {args.groups}, {args.runs} runs (s):")
    print(f"  the page's reads     median {statistics.median(page):.3f}, worst {max(page):.3f}")
    print(f"  one group at a time  median {statistics.median(base):.3f}, worst {max(base):.3f}")
    print(f"  ratio {statistics.median(base) / statistics.median(page):.1f}x faster than the baseline")


if __name__ == "__main__":
    main()
