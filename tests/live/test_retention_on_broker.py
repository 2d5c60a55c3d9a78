"""Retention risk on a real broker whose files really go: 1 MiB commit-log files kept 0 hours
(deleted at the next deletion hour, set 12 hours away, or when asked), and a stopped group
behind on 4 queues, two of them only in the commit log's current file. The poll names the two
others and what they will lose; `mqadmin deleteExpiredCommitLog` then deletes every file but the
current one, and OFFSET_EXPIRED follows on exactly those queues, their new min offsets where the
forecast said (mqadmin topicStatus the oracle)."""

from __future__ import annotations

import asyncio
import os
import re

import pytest
from django.utils import timezone

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.rocketmq import AdminClient
from consumers.rocketmq.models import MessageQueue, SubscriptionGroupConfig, TopicConfig
from devstack.mqadmin import MQAdmin
from devstack.rocketmq import LocalRocketMQ
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker]

TOPIC, GROUP, BROKER = "T-retention", "G-retention", "broker-a"
FILE = 1 << 20
BIG = 600  # 2 KB messages on queues 0 and 1 first (about 2.6 MiB), then, in the next commit-log file
SMALL = 50  # 50 small ones on each queue: queues 2 and 3 have messages in the current file only


def test_the_queues_retention_will_empty_are_named_before_and_expired_after(rmq_runtime, db, redis, history_dir,
                                                                            tmp_path, viewer_client):  # fmt: skip
    hour = (timezone.localtime().hour + 12) % 24  # the broker deletes by itself only then
    config = {"mappedFileSizeCommitLog": str(FILE), "fileReservedTime": "0", "deleteWhen": f"{hour:02d}",
              "diskMaxUsedSpaceRatio": "95", "cleanResourceInterval": "1000"}  # fmt: skip
    local = LocalRocketMQ(rmq_runtime, broker_names=(BROKER,), base_dir=tmp_path / "rmq", broker_config=config)
    local.start()
    try:
        asyncio.run(_prepare(local.namesrv_addr))
        cluster = Cluster.objects.create(name="ret", namesrv_addrs=local.namesrv_addr)
        poll_cluster(cluster)
        doc = snapshots.read_details(redis, cluster.pk)[GROUP]
        at_risk = {q["queue"]: q["lost"] for q in doc.retention["queues"]}
        print(f"\nforecast: {doc.retention}")
        assert doc.retention["state"] == "AT_RISK" and at_risk == {f"{TOPIC}@{BROKER}#{q}": BIG for q in (0, 1)}
        assert "RETENTION_RISK" in [f["state"] for f in doc.health["findings"]]
        assert not any(q.expired for q in doc.queues)
        page = viewer_client.get(f"/groups/ret/{GROUP}/").content.decode()
        stat = page.split('id="retention"', 1)[1].split("</b>", 1)[0]
        assert "about 1,200 lost in" in stat and f"{TOPIC}@{BROKER}#0: about 600 in" in stat
        assert "2 queues will lose about 1200 messages to retention" in page
        chinese = viewer_client.get(f"/groups/ret/{GROUP}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        assert "2 个队列将因保留期过期丢失约 1200 条消息" in chinese and "will lose" not in chinese

        mqadmin = MQAdmin(rmq_runtime, local.namesrv_addr, tmp_path / "mqadmin")
        try:
            assert "success" in mqadmin.run("deleteExpiredCommitLog", "-c", local.cluster).out

            def min_offsets() -> dict[int, int]:
                text = mqadmin.run("topicStatus", "-t", TOPIC).out
                rows = re.findall(rf"^{BROKER}\s+(\d+)\s+(\d+)\s+(\d+)", text, re.M)
                return {int(q): int(low) for q, low, _ in rows}

            # the broker's first clean-up runs a minute after it started, then every second
            wait(lambda: min_offsets()[0] > 0 and min_offsets()[1] > 0, 150, "files deleted, min offsets moved")
            lowest = min_offsets()
        finally:
            mqadmin.close()
        print(f"min offsets after the deletion: {lowest}")
        assert {q: lowest[q] for q in (0, 1)} == {q: at_risk[f"{TOPIC}@{BROKER}#{q}"] for q in (0, 1)}
        assert lowest[2] == lowest[3] == 0 and lowest[0] == lowest[1] == BIG
        poll_cluster(cluster)
        doc = snapshots.read_details(redis, cluster.pk)[GROUP]
        assert {q.queue_id for q in doc.queues if q.expired} == {0, 1}
        assert doc.health["state"] == "OFFSET_EXPIRED"
    finally:
        local.discard()


async def _prepare(namesrv: str) -> None:
    async with AdminClient(namesrv) as client:
        masters = list((await client.topology.cluster_info()).masters().values())
        await client.actions.create_or_update_topic(TopicConfig(TOPIC, 4, 4), masters)
        await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig(GROUP), masters)

        async def send(topic: str, queue_id: int, count: int, size: int) -> None:
            for _ in range(count):  # bytes that do not compress: 2 KB ones about 470 to a file
                await client.actions.send_message(topic, os.urandom(size), queue=MessageQueue(topic, BROKER, queue_id),
                                                  compress=False)  # fmt: skip

        async def written() -> int:
            return int((await client.topology.broker_runtime_info(masters[0])).table["commitLogMaxOffset"])

        await send(TOPIC, 0, BIG, 2_000)
        await send(TOPIC, 1, BIG, 2_000)
        filled = (await written()) // FILE
        while (await written()) // FILE == filled:  # on another topic, until the broker starts a new file
            await send("T-retention-filler", 0, 10, 2_000)
        await asyncio.gather(*(send(TOPIC, q, SMALL, 200) for q in range(4)))
        for queue_id in range(4):
            await client.actions.update_consumer_offset(GROUP, MessageQueue(TOPIC, BROKER, queue_id), 0)
