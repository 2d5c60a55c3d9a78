"""Shared set-up for the benchmarks: a local cluster with many consumer groups.

Each group gets a subscription group config, its %RETRY% topic (so Java's admin can route
it, as it does for any group that ever consumed) and committed offsets on every queue of
one 8-queue topic, with a lag that differs from group to group.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import retry_topic
from consumers.rocketmq.models import MessageQueue, SubscriptionGroupConfig, TopicConfig
from devstack.mqadmin import MQAdmin
from devstack.rocketmq import LocalRocketMQ
from devstack.runtime import ensure_runtime
from devstack.traffic import Harness

TOPIC = "T-bench"
QUEUES = 8
PREFIX = "bench-group-"


def group_names(count: int) -> list[str]:
    return [f"{PREFIX}{i:04d}" for i in range(count)]


def start_cluster(base: Path | None = None) -> LocalRocketMQ:
    return LocalRocketMQ(ensure_runtime(), base_dir=base or Path(tempfile.mkdtemp(prefix="bench-"))).start()


def start_cluster_with_clients(base: Path) -> tuple[LocalRocketMQ, MQAdmin, Harness]:
    """Two brokers, mqadmin's long-lived JVM and the Java harness (the official clients)."""
    runtime = ensure_runtime()
    local = LocalRocketMQ(runtime, broker_names=("broker-a", "broker-b"), base_dir=Path(tempfile.mkdtemp())).start()
    return local, MQAdmin(runtime, local.namesrv_addr, base / "mqadmin"), Harness(runtime, local.namesrv_addr,
                                                                                   base / "harness")  # fmt: skip


async def _prepare(namesrv: str, groups: list[str], messages_per_queue: int, start: int) -> None:
    async with AdminClient(namesrv, request_timeout=30) as client:
        masters = list((await client.topology.cluster_info()).masters().values())
        broker = next(iter((await client.topology.cluster_info()).masters()))
        if start == 0:
            await client.actions.create_or_update_topic(TopicConfig(TOPIC, QUEUES, QUEUES), masters)
            await asyncio.gather(
                *(
                    client.actions.send_message(TOPIC, f"m{q}-{i}".encode(), queue=MessageQueue(TOPIC, broker, q))
                    for q in range(QUEUES)
                    for i in range(messages_per_queue)
                )
            )
        limit = asyncio.Semaphore(64)

        async def one(index: int, group: str) -> None:
            async with limit:
                await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig(group), masters)
                await client.actions.create_or_update_topic(TopicConfig(retry_topic(group), 1, 1), masters)
                for q in range(QUEUES):
                    offset = (index + q) % (messages_per_queue + 1)
                    await client.actions.update_consumer_offset(group, MessageQueue(TOPIC, broker, q), offset)

        await asyncio.gather(*(one(i, g) for i, g in enumerate(groups, start)))


def prepare_groups(cluster: LocalRocketMQ, count: int, *, messages_per_queue: int = 10, start: int = 0) -> list[str]:
    """Groups 0 .. count-1; with `start`, only those from it on are created (the others exist)."""
    groups = group_names(count)
    started = time.monotonic()
    asyncio.run(_prepare(cluster.namesrv_addr, groups[start:], messages_per_queue, start))
    print(f"set-up: {count} groups with offsets on {QUEUES} queues in {time.monotonic() - started:.1f} s")
    return groups


def seed_groups(cluster: LocalRocketMQ, count: int, *, start: int, messages_per_queue: int = 10) -> list[str]:
    """Groups `start` .. count-1 as prepare_groups makes them (subscription group, retry topic,
    offsets on the first master's queues of TOPIC), written into each broker's config files while
    it is stopped, then the broker started again. Made with admin calls, 50,000 groups take very
    long: a broker rewrites its whole topics.json for every topic created. prepare_groups must
    have made TOPIC and its messages first (start > 0)."""
    from consumers.rocketmq.fastjson import loads

    assert start > 0, "prepare_groups makes the topic and its messages first"
    groups = group_names(count)
    started = time.monotonic()
    first = sorted(cluster.brokers)[0]
    for name in sorted(cluster.brokers):
        cluster.stop_broker(name)
        config = cluster.brokers[name].store / "config"
        subscriptions = loads((config / "subscriptionGroup.json").read_text())
        topics = loads((config / "topics.json").read_text())
        model = subscriptions["subscriptionGroupTable"][groups[0]]
        retry = topics["topicConfigTable"][retry_topic(groups[0])]
        for group in groups[start:]:
            subscriptions["subscriptionGroupTable"][group] = {**model, "groupName": group}
            topics["topicConfigTable"][retry_topic(group)] = {**retry, "topicName": retry_topic(group)}
        (config / "subscriptionGroup.json").write_text(json.dumps(subscriptions))
        (config / "topics.json").write_text(json.dumps(topics))
        if name == first:  # the offsets, in the broker's own form: queue ids as bare numbers
            offsets = loads((config / "consumerOffset.json").read_text())
            table = ",".join(
                json.dumps(f"{topic}@{group}") + ":{" + ",".join(f"{q}:{v}" for q, v in queues.items()) + "}"
                for key, queues in offsets["offsetTable"].items()
                for topic, _, group in [key.partition("@")]
            )
            table += "," + ",".join(
                json.dumps(f"{TOPIC}@{group}") + ":{"
                + ",".join(f"{q}:{(index + q) % (messages_per_queue + 1)}" for q in range(QUEUES)) + "}"
                for index, group in enumerate(groups[start:], start)
            )  # fmt: skip
            mapping = {**offsets.get("groupTopicMap", {}), **{g: [TOPIC] for g in groups[start:]}}
            (config / "consumerOffset.json").write_text(
                '{"dataVersion":' + json.dumps(offsets["dataVersion"]) + ',"groupTopicMap":' + json.dumps(mapping)
                + ',"offsetTable":{' + table.strip(",") + "}}"
            )  # fmt: skip
        for backup in config.glob("*.bak"):
            backup.unlink()  # else a broker may prefer a backup it finds newer
        cluster.start_broker(name)
    cluster.wait_registered(set(cluster.brokers))
    print(f"set-up: {count} groups ({count - start} written into the brokers' configs) in "
          f"{time.monotonic() - started:.1f} s")  # fmt: skip
    return groups


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def describe(values: list[float]) -> str:
    return (
        f"p50 {percentile(values, 50):7.2f}  p95 {percentile(values, 95):7.2f}  "
        f"mean {statistics.mean(values):7.2f}  (n={len(values)})"
    )
