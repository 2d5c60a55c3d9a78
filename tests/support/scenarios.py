"""Consumer groups brought into known, settled states by the traffic harness, for tests
that compare what we read with what mqadmin reads at the same moment."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from devstack.mqadmin import MQAdmin, parse_consumer_progress, parse_topic_status
from devstack.traffic import ConsumerRun, Harness, ProducerRun


@dataclass
class Groups:
    topic: str
    produced: ProducerRun
    healthy: ConsumerRun
    lagging: ConsumerRun
    failing: ConsumerRun
    stalled: ConsumerRun
    doomed: set[str] = field(default_factory=set)
    stalled_key: str = ""

    @property
    def all(self) -> list[ConsumerRun]:
        return [self.healthy, self.lagging, self.failing, self.stalled]


def wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout}s: {what}")
        time.sleep(0.5)


def dlq_size(mqadmin: MQAdmin, group: str) -> int:
    out = mqadmin.run("topicStatus", "-t", f"%DLQ%{group}", check=False).out
    return sum(r.max_offset - r.min_offset for r in parse_topic_status(out))


def wait_committed(mqadmin: MQAdmin, group: str, topic: str, *, diff: int, queues: int = 8, retry: bool = False):
    """Wait until the broker holds the offsets the harness says were consumed. Java clients
    first persist offsets 10 s after they start, then every second (harness setting)."""

    def committed() -> bool:
        progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
        main = [r for r in progress.rows if r.topic == topic]
        # each broker holds its own %RETRY% queue, committed on its own schedule: wait for all
        retry_brokers = {r.broker for r in progress.rows if r.topic.startswith("%RETRY%")}
        return len(main) == queues and sum(r.diff for r in main) == diff and (not retry or len(retry_brokers) == 2)

    wait(committed, 60, f"{group} committed its offsets")


def settle_groups(harness: Harness, mqadmin: MQAdmin, count: int = 60) -> Groups:
    """Produce `count` messages (text, binary, compressed) to a fresh 8-queue topic and bring
    four groups to rest: healthy (all consumed), lagging (20 consumed, then stopped),
    failing (every 5th key dead-lettered after 3 deliveries) and stalled (one message held)."""
    suffix = uuid.uuid4().hex[:6]
    topic = f"T-settled-{suffix}"
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4")
    # keys that are multiples of 5 die; with these kinds the dead ones hold text, binary
    # (i % 3 == 2: 5, 35, 50) and compressed bodies (i % 7 == 6: 20, 55)
    produced = harness.produce(topic, count, binaryEvery=3, largeEvery=7)
    stalled_key = produced.sent[count // 3].key
    groups = Groups(
        topic=topic,
        produced=produced,
        healthy=harness.consume(f"G-healthy-{suffix}", topic, mode="healthy"),
        lagging=harness.consume(f"G-lagging-{suffix}", topic, mode="lagging", stopAfter=20),
        failing=harness.consume(f"G-failing-{suffix}", topic, mode="failing", failEvery=5, maxReconsumeTimes=2),
        stalled=harness.consume(f"G-stalled-{suffix}", topic, mode="stalled", stallKey=stalled_key),
        stalled_key=stalled_key,
    )
    groups.doomed = {m.msg_id for m in produced.sent if int(m.key.rsplit("-", 1)[1]) % 5 == 0}
    groups.lagging.wait_acked(20)
    groups.healthy.wait_acked(count, timeout=90)
    groups.stalled.wait_acked(count - 1, timeout=90)
    groups.failing.wait_acked(count - len(groups.doomed), timeout=90)
    wait(lambda: dlq_size(mqadmin, groups.failing.group) == len(groups.doomed), 90, "DLQ filled")

    def failing_done() -> bool:
        deliveries = Counter(e["msgId"] for e in groups.failing.deliveries if e["result"] == "later")
        return set(deliveries) == groups.doomed and set(deliveries.values()) == {3}

    wait(failing_done, 60, "every doomed message failed three times")
    wait_committed(mqadmin, groups.healthy.group, topic, diff=0, retry=True)
    # committed while online, then stopped: the oneway commit at shutdown can be lost
    wait_committed(mqadmin, groups.lagging.group, topic, diff=count - 20)
    groups.lagging.stop()
    # the held message pins its queue: everything from it to the end of that queue is lag
    held = next(m for m in produced.sent if m.key == stalled_key)
    pinned = sum(1 for m in produced.sent if (m.broker, m.queue_id) == (held.broker, held.queue_id))
    wait_committed(mqadmin, groups.stalled.group, topic, diff=pinned - held.queue_offset, retry=True)
    wait_committed(mqadmin, groups.failing.group, topic, diff=0, retry=True)
    time.sleep(2)  # nothing may move any more: a late commit would make comparisons racy
    return groups


PREPARED_MESSAGES = 8


def prepared_cluster(
    runtime,
    base_dir,
    *,
    topic: str,
    group: str,
    broker_names=("broker-a", "broker-b"),
    broker_config=None,
    credentials=None,
):
    """A cluster of its own (for tests that stop, freeze or lock down brokers): `topic` with two
    queues per broker, PREPARED_MESSAGES messages, and `group` with offset 1 committed on
    every queue. Returns the started cluster; the caller stops it."""
    import asyncio

    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import MessageQueue, SubscriptionGroupConfig, TopicConfig
    from devstack.rocketmq import LocalRocketMQ

    cluster = LocalRocketMQ(
        runtime, broker_names=tuple(broker_names), base_dir=base_dir, broker_config=broker_config or {}
    )
    cluster.start()

    async def prepare():
        async with AdminClient(cluster.namesrv_addr, credentials=credentials) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            await client.actions.create_or_update_topic(TopicConfig(topic, 2, 2), masters)
            await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig(group), masters)
            for i in range(PREPARED_MESSAGES):
                await client.actions.send_message(topic, f"m{i}".encode())
            for broker in broker_names:
                for queue in range(2):
                    await client.actions.update_consumer_offset(group, MessageQueue(topic, broker, queue), 1)

    try:
        asyncio.run(prepare())
    except BaseException:
        cluster.stop()
        raise
    return cluster


def offline_group(mqadmin, namesrv, group: str, offsets: dict[tuple[str, str, int], int]) -> None:
    """A group that consumed and went away: its config, its retry topic (so mqadmin can route
    it) and committed offsets the test chose."""
    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.codes import retry_topic
    from consumers.rocketmq.models import MessageQueue
    from tests.conftest import run

    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group)
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", retry_topic(group), "-r", "1", "-w", "1")

    async def commit():
        async with AdminClient(namesrv) as client:
            for (topic, broker, queue_id), offset in offsets.items():
                await client.actions.update_consumer_offset(group, MessageQueue(topic, broker, queue_id), offset)

    run(commit())
