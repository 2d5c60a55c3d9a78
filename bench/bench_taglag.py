"""What counting lag for groups' tags adds to a full poll: the same cluster polled as two cluster
rows, alternately, one with the tag counts (its groups' subscriptions known) and one without.

    python -m bench.bench_taglag [--groups 10000] [--tagged 1000] [--topics 50] [--polls 6]

Every group commits offsets on the benchmark's topic (bench/common.py); the first `--tagged`
also on one of `--topics` topics of 4 queues carrying 1,000 messages per queue with tags in a
mix, at offsets spread over the queue, and are known (as last seen) to subscribe to tag A. The
first poll with tag counts reads every block once; the polls after it read each queue's newest
block only. Prints each row's median poll after the first, the tag stage, and their ratio
(target: at most 1.10).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from bench.common import prepare_groups, start_cluster
from bench.django_env import setup_django

PER_QUEUE, QUEUES = 1_000, 4
TAGS = ["A", "B", "B", "B", "C", "B", "B"]  # 7 long: the 4 queues each get every tag


async def _prepare_tagged(namesrv: str, groups: list[str], topics: list[str]) -> None:
    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import MessageQueue, Outgoing, TopicConfig

    async with AdminClient(namesrv, request_timeout=30) as client:
        masters = (await client.topology.cluster_info()).masters()
        broker = next(iter(masters))
        for topic in topics:
            await client.actions.create_or_update_topic(TopicConfig(topic, QUEUES, QUEUES), [masters[broker]])
        outgoing = [
            Outgoing(topic, f"m{i}".encode(), {"TAGS": TAGS[i % len(TAGS)]})
            for topic in topics
            for i in range(PER_QUEUE * QUEUES)
        ]
        for start in range(0, len(outgoing), 20_000):
            await client.actions.send_messages(outgoing[start : start + 20_000])
        limit = asyncio.Semaphore(64)

        async def commit(index: int, group: str) -> None:
            topic = topics[index % len(topics)]
            async with limit:
                for q in range(QUEUES):
                    offset = (index * 37 + q * 101) % PER_QUEUE
                    await client.actions.update_consumer_offset(group, MessageQueue(topic, broker, q), offset)

        await asyncio.gather(*(commit(i, g) for i, g in enumerate(groups)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--tagged", type=int, default=1_000)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--polls", type=int, default=6)
    args = parser.parse_args()
    _, redis_server = setup_django()
    from consumers.jobs.redis_client import get_redis
    from consumers.live import snapshots
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster

    cluster_process = start_cluster()
    try:
        groups = prepare_groups(cluster_process, args.groups)
        topics = [f"T-bench-tags-{i:03d}" for i in range(args.topics)]
        started = time.monotonic()
        asyncio.run(_prepare_tagged(cluster_process.namesrv_addr, groups[: args.tagged], topics))
        print(f"set-up: {args.tagged} groups on {args.topics} tagged topics in {time.monotonic() - started:.1f} s")
        plain = Cluster.objects.create(name="plain", namesrv_addrs=cluster_process.namesrv_addr)
        tagged = Cluster.objects.create(name="tags", namesrv_addrs=cluster_process.namesrv_addr)
        # their subscriptions as last seen (the benchmark's groups have no clients online)
        said = [json.dumps({topics[i % len(topics)]: ["TAG", "A", ["A"]]}) for i in range(args.tagged)]
        seen = dict(zip(groups[: args.tagged], said, strict=True))
        get_redis().hset(snapshots.key(tagged.pk, "subscriptions"), mapping=seen)
        durations: dict[str, list[float]] = {"plain": [], "tags": []}
        stage: list[float] = []
        for i in range(args.polls):
            for name, cluster in (("plain", plain), ("tags", tagged)):
                result = poll_cluster(cluster)
                assert result.status == "ok" and result.groups >= args.groups, result
                durations[name].append(result.duration)
                if name == "tags":
                    stage.append(result.stages.get("tag lag", 0.0))
                print(f"poll {i + 1} {name:>5}: {result.duration:.3f} s"
                      + (f" (tag lag {stage[-1]:.3f} s)" if name == "tags" else ""))  # fmt: skip
        docs = snapshots.read_details(get_redis(), tagged.pk)
        counted = [d for d in docs.values() if d.tag_filters]
        exact = sum(1 for d in counted if d.tag_lag is not None and not d.tag_lag_estimated)
        print(f"\n{len(counted)} groups with a tag filter, {exact} of them counted exactly at the last poll")
    finally:
        cluster_process.stop()
        redis_server.stop()
    base = statistics.median(durations["plain"][1:])
    with_tags = statistics.median(durations["tags"][1:])
    ratio = with_tags / base
    print(f"first poll with tag counts (every block read): {durations['tags'][0]:.3f} s, tag stage {stage[0]:.3f} s")
    print(f"median poll after the first: without tag counts {base:.3f} s, with {with_tags:.3f} s "
          f"(tag stage {statistics.median(stage[1:]):.3f} s)")  # fmt: skip
    print(f"ratio {ratio:.2f} (target: at most 1.10 -> {'met' if ratio <= 1.10 else 'NOT met'})")


if __name__ == "__main__":
    main()
