"""Reset preview of a group on 8 topics x 128 queues (1,024 queues, two brokers): time from
the request to the rendered preview, against mqadmin consumerProgress for the same group in
a warm, long-lived mqadmin JVM, measured in the same run.

    python -m bench.bench_reset_preview [--repeats 15]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import describe, percentile
from bench.django_env import setup_django
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import retry_topic
from consumers.rocketmq.models import MessageQueue, SubscriptionGroupConfig, TopicConfig
from devstack.mqadmin import MQAdmin, parse_consumer_progress
from devstack.rocketmq import LocalRocketMQ
from devstack.runtime import ensure_runtime

GROUP = "bench-reset-group"
TOPICS = [f"bench-reset-{i}" for i in range(8)]
QUEUES_PER_BROKER = 64


async def prepare(namesrv: str) -> None:
    async with AdminClient(namesrv, request_timeout=30) as client:
        masters = (await client.topology.cluster_info()).masters()
        for topic in TOPICS:
            await client.actions.create_or_update_topic(
                TopicConfig(topic, QUEUES_PER_BROKER, QUEUES_PER_BROKER), list(masters.values())
            )
        await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig(GROUP), list(masters.values()))
        await client.actions.create_or_update_topic(TopicConfig(retry_topic(GROUP), 1, 1), list(masters.values()))
        queues = [MessageQueue(t, b, q) for t in TOPICS for b in masters for q in range(QUEUES_PER_BROKER)]
        sends = [mq for mq in queues for _ in range(3)]
        for start in range(0, len(sends), 256):  # in chunks: all at once trips the broker's flow control
            await asyncio.gather(
                *(client.actions.send_message(mq.topic, b"m", queue=mq) for mq in sends[start : start + 256])
            )
        await asyncio.gather(*(client.actions.update_consumer_offset(GROUP, mq, 1) for mq in queues))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    base, redis = setup_django()
    runtime = ensure_runtime()
    cluster_process = LocalRocketMQ(
        runtime, broker_names=("broker-a", "broker-b"), base_dir=Path(tempfile.mkdtemp(prefix="bench-reset-"))
    ).start()
    mqadmin = MQAdmin(runtime, cluster_process.namesrv_addr, base / "mqadmin")
    try:
        started = time.monotonic()
        asyncio.run(prepare(cluster_process.namesrv_addr))
        print(f"set-up: {len(TOPICS)} topics x {2 * QUEUES_PER_BROKER} queues in {time.monotonic() - started:.1f} s")
        from django.test import Client

        from consumers.identity import create_or_update_user
        from consumers.models import Cluster

        Cluster.objects.create(name="bench", namesrv_addrs=cluster_process.namesrv_addr)
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(create_or_update_user("bench", "operator", "bench-password-123"))
        pages = {}
        for strategy in ("earliest", "time"):
            query = f"strategy={strategy}" + ("&timestamp=2026-01-01T00:00" if strategy == "time" else "")
            url = f"/groups/bench/{GROUP}/reset/preview/?{query}"
            response = client.get(url)
            assert response.status_code == 200 and response.content.count(b'class="plan-row"') == 1024, (
                response.content[:500]
            )
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                client.get(url)
                times.append((time.perf_counter() - t0) * 1000)
            pages[strategy] = times
        from consumers.resets.services import preview

        bench_cluster = Cluster.objects.get(name="bench")
        read_only = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            preview(bench_cluster, GROUP, {"strategy": "time", "timestamp_ms": 1767225600000})
            read_only.append((time.perf_counter() - t0) * 1000)
        approvals = _approvals(bench_cluster, args.repeats)
        rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", GROUP).out).rows
        assert len(rows) == 1024, len(rows)
        theirs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            mqadmin.run("consumerProgress", "-g", GROUP)
            theirs.append((time.perf_counter() - t0) * 1000)
    finally:
        mqadmin.close()
        cluster_process.stop()
        redis.stop()
    print(f"\nReset preview, 1,024 queues on two brokers, {args.repeats} repeats (ms)")
    for strategy, times in pages.items():
        print(f"  ours, rendered preview ({strategy:8}) {describe(times)}")
    print(f"  ours, broker read only (time)       {describe(read_only)}")
    print(f"  mqadmin consumerProgress (warm JVM) {describe(theirs)}")
    print(f"  ours, approval incl. the effect read again {describe(approvals)}")
    ours = percentile(pages["time"], 50)
    print(f"\nmedian preview to a time {ours:.0f} ms (goal < 1000), {ours / percentile(theirs, 50):.2f}x mqadmin")
    approval = percentile(approvals, 50)
    print(f"median approval of the 1,024-queue reset {approval:.0f} ms (goal < 1000)")


def _approvals(cluster, repeats: int) -> list[float]:
    """workflow.approve of a pending 1,024-queue reset, which reads the effect again from the
    brokers (resets/effect.py): each repeat a fresh request, approved by a second person."""
    from consumers.changes.guards import Actor
    from consumers.changes.workflow import approve, cancel
    from consumers.identity import create_or_update_user
    from consumers.resets.services import request_reset

    operator = Actor(create_or_update_user("bench-op", "operator", "bench-password-123"))
    approver = Actor(create_or_update_user("bench-ap", "approver", "bench-password-123"))
    times = []
    for _ in range(repeats):
        request = request_reset(actor=operator, cluster=cluster, group=GROUP, params={"strategy": "earliest"},
                                reason="bench")  # fmt: skip
        assert len(request.plan["rows"]) == 1024
        t0 = time.perf_counter()
        approve(request, actor=approver)
        times.append((time.perf_counter() - t0) * 1000)
        cancel(request, actor=operator)  # approved, never run: withdrawn before the next one
    return times


if __name__ == "__main__":
    main()
