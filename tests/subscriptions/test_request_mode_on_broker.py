"""The message request mode on the config page, against the real cluster: a group's topic set to
POP with mqadmin setConsumeMode (3 clients to a queue) on the cluster shows POP, its share and
"set on this broker" on each broker; its other topic shows PULL, the brokers' default."""

from __future__ import annotations

import asyncio

import pytest

from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.rocketmq import AdminClient
from consumers.rocketmq.models import MessageQueue, SubscriptionGroupConfig

pytestmark = [pytest.mark.broker]


def test_the_config_page_shows_each_topics_request_mode_per_broker(db, namesrv, names, create_topic, mqadmin, redis,
                                                                   history_dir, viewer_client):  # fmt: skip
    popped, pulled, group = create_topic(names.topic("pop")), create_topic(names.topic("pull")), names.group("modes")

    async def commit() -> None:  # offsets on both topics: the poll lists the group with them
        async with AdminClient(namesrv) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig(group), masters)
            for topic in (popped, pulled):
                for broker in ("broker-a", "broker-b"):
                    await client.actions.update_consumer_offset(group, MessageQueue(topic, broker, 0), 0)

    asyncio.run(commit())
    mqadmin.run("setConsumeMode", "-c", "DefaultCluster", "-t", popped, "-g", group, "-m", "POP", "-q", "3")
    poll_cluster(Cluster.objects.create(name="local", namesrv_addrs=namesrv))
    page = viewer_client.get(f"/groups/local/{group}/config/").content.decode()
    table = page.split('id="request-modes"', 1)[1].split("</table>", 1)[0]
    for broker in ("broker-a", "broker-b"):
        row = table.split(f'data-topic="{popped}" data-broker="{broker}"', 1)[1].split("</tr>", 1)[0]
        assert 'data-mode="POP"' in row and '<td class="num">3</td>' in row and "set on this broker" in row
        row = table.split(f'data-topic="{pulled}" data-broker="{broker}"', 1)[1].split("</tr>", 1)[0]
        assert 'data-mode="PULL"' in row and "the broker's default" in row
