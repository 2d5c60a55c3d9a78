"""Unthrottled DLQ redrive of 10,000 messages, against two baselines measured in the same run
on the same broker with the same bodies: the broker's raw limit (pre-encoded SEND_MESSAGE_V2
requests pipelined over one connection) and the official Java producer (synchronous sends).

    python -m bench.bench_redrive [--messages 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.django_env import setup_django
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import DEFAULT_TOPIC, RequestCode, dlq_topic
from consumers.rocketmq.message import format_properties
from consumers.rocketmq.models import TopicConfig
from devstack.rocketmq import LocalRocketMQ
from devstack.runtime import ensure_runtime
from devstack.traffic import Harness

GROUP = "bench-redrive"
BODY = b'{"order": 12345, "state": "failed", "note": "a dead letter of about a hundred bytes......"}'


async def fill(namesrv: str, count: int) -> None:
    async with AdminClient(namesrv, request_timeout=30) as client:
        masters = list((await client.topology.cluster_info()).masters().values())
        for topic in (dlq_topic(GROUP), "bench-redrive-target", "bench-raw-target", "bench-java-target"):
            queues = 1 if topic == dlq_topic(GROUP) else 8
            await client.actions.create_or_update_topic(TopicConfig(topic, queues, queues), masters)
        for start in range(0, count, 1000):
            await asyncio.gather(*(
                client.actions.send_message(dlq_topic(GROUP), BODY, keys=[f"k-{i}"],
                                            properties={"RETRY_TOPIC": "orders", "ORIGIN_MESSAGE_ID": f"o-{i}"})
                for i in range(start, min(count, start + 1000))
            ))  # fmt: skip


async def raw_sends(namesrv: str, count: int) -> float:
    """The broker's limit for these bodies: requests encoded up front, then pipelined."""
    async with AdminClient(namesrv, request_timeout=30) as client:
        route = await client.topology.topic_route("bench-raw-target")
        broker, address = next(iter(sorted(route.master_addrs().items())))
        requests = [
            {"a": "bench", "b": "bench-raw-target", "c": DEFAULT_TOPIC, "d": 4, "e": i % 8, "f": 0,
             "g": int(time.time() * 1000), "h": 0, "i": format_properties({"UNIQ_KEY": f"{i:032X}", "KEYS": f"k-{i}",
             "WAIT": "true"}), "j": 0, "k": "false", "m": "false", "n": broker}
            for i in range(count)
        ]  # fmt: skip
        started = time.perf_counter()
        await asyncio.gather(*(client.remoting.call(address, RequestCode.SEND_MESSAGE_V2, f, BODY) for f in requests))
        return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args()
    base, redis = setup_django()
    runtime = ensure_runtime()
    local = LocalRocketMQ(runtime, base_dir=Path(tempfile.mkdtemp(prefix="bench-redrive-"))).start()
    harness = Harness(runtime, local.namesrv_addr, base / "harness")
    try:
        asyncio.run(fill(local.namesrv_addr, args.messages))
        from django.conf import settings

        from consumers.changes.workflow import Actor
        from consumers.dlq import redrive
        from consumers.dlq.browse import Selection
        from consumers.models import Cluster
        from consumers.users import create_or_update_user

        settings.REDRIVE_APPROVAL_THRESHOLD = 10**9  # the benchmark measures the run, not the approval
        cluster = Cluster.objects.create(name="bench", namesrv_addrs=local.namesrv_addr)
        operator = create_or_update_user("op", "operator", "bench-password-123")
        job = redrive.plan_redrive(
            actor=Actor(operator),
            cluster=cluster,
            group=GROUP,
            selection=Selection(),
            target="topic",
            target_topic="bench-redrive-target",
            rate=settings.REDRIVE_MAX_RATE,
        )
        started = time.perf_counter()
        done = redrive.run_job(job.pk)
        ours = args.messages / (time.perf_counter() - started)
        assert done.state == "done" and done.moved == args.messages, (done.state, done.moved)
        raw = asyncio.run(raw_sends(local.namesrv_addr, args.messages))
        started = time.perf_counter()
        harness.produce("bench-java-target", args.messages, timeout=600, quiet=True)
        java = args.messages / (time.perf_counter() - started)
    finally:
        harness.close()
        local.stop()
        redis.stop()
    print(f"\nRedrive of {args.messages} messages, unthrottled (messages/s)")
    print(f"  ours (read DLQ, send, checkpoint, record)  {ours:9.0f}")
    print(f"  raw limit (pre-encoded, pipelined)         {raw:9.0f}   ours = {ours / raw:.0%} of it (goal >= 50 %)")
    print(f"  Java producer (synchronous sends)          {java:9.0f}   ours = {ours / java:.2f}x")


if __name__ == "__main__":
    main()
