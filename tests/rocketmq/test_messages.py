"""Reading messages from the real cluster: DLQs, compressed bodies, lookups, side-effect-free pulls."""

from __future__ import annotations

from collections import Counter

import pytest

from consumers.rocketmq import AdminClient, NoPermission, NotFound
from consumers.rocketmq.codes import dlq_topic
from consumers.rocketmq.models import MessageQueue
from tests.conftest import run

pytestmark = pytest.mark.broker


async def _pull_topic(client: AdminClient, topic: str):
    route = await client.topology.topic_route(topic)
    messages = []
    for mq in route.read_queues():
        max_offset = await client.progress.max_offset(mq)
        messages += await client.messages.pull_range(mq, 0, max_offset)
    return messages


def test_dlq_messages_are_exactly_the_failed_ones_with_everything_intact(settled, namesrv):
    sent = {m.msg_id: m for m in settled.produced.sent}
    failures = Counter(e["msgId"] for e in settled.failing.deliveries if e["result"] == "later")

    async def read():
        async with AdminClient(namesrv) as client:
            return await _pull_topic(client, dlq_topic(settled.failing.group))

    dead = run(read())
    assert sorted(m.msg_id for m in dead) == sorted(settled.doomed)
    kinds = Counter(sent[m.msg_id].kind for m in dead)
    assert kinds["text"] and kinds["binary"] and kinds["large"], kinds
    for message in dead:
        original = sent[message.msg_id]
        assert message.body == original.body
        assert message.keys == [original.key] and message.tags == original.tag
        assert message.original_topic == settled.topic and message.topic == dlq_topic(settled.failing.group)
        # the dead copy counts every failed delivery the harness saw
        assert message.reconsume_times == failures[message.msg_id] == 3
        assert message.compressed == (original.kind == "large")
        assert message.properties["ORIGIN_MESSAGE_ID"]


@pytest.mark.parametrize("compression", ["LZ4", "ZSTD", "ZLIB"])
def test_compressed_bodies_of_each_type_come_back_as_sent(traffic, names, create_topic, namesrv, compression):
    topic = create_topic(names.topic(compression.lower()), queues=1)
    produced = traffic.produce(topic, 6, largeEvery=2, compressType=compression)

    async def read():
        async with AdminClient(namesrv) as client:
            return await _pull_topic(client, topic)

    got = {m.msg_id: m for m in run(read())}
    assert set(got) == {m.msg_id for m in produced.sent}
    for original in produced.sent:
        message = got[original.msg_id]
        assert message.body == original.body
        if original.kind == "large":
            assert message.compression == compression and len(message.stored_body) < len(message.body)
        else:
            assert not message.compressed


def test_view_by_offset_id_and_by_client_id_and_query_by_key(settled, namesrv):
    original = settled.produced.sent[7]

    async def read():
        async with AdminClient(namesrv) as client:
            by_offset = await client.messages.view(original.offset_msg_id)
            by_client_id = await client.messages.view(original.msg_id, topic=settled.topic)
            by_key = await client.messages.query_by_key(settled.topic, original.key)
            with pytest.raises(NotFound):
                await client.messages.view("0" * 32, topic=settled.topic)
            return by_offset, by_client_id, by_key

    by_offset, by_client_id, by_key = run(read())
    for message in (by_offset, by_client_id):
        assert message.msg_id == original.msg_id and message.body == original.body
        assert (message.queue_id, message.queue_offset) == (original.queue_id, original.queue_offset)
    assert by_offset.offset_msg_id == original.offset_msg_id
    assert [m.msg_id for m in by_key] == [original.msg_id]


def test_browsing_a_queue_leaves_every_group_offset_alone(settled, namesrv):
    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()

            async def offsets():
                stats = {}
                for address in masters.values():
                    part = await client.progress.consume_stats(settled.lagging.group, address)
                    stats.update({mq: (w.consumer_offset, w.pull_offset) for mq, w in part.offsets.items()})
                return stats

            before = await offsets()
            pulled = await _pull_topic(client, settled.topic)
            return before, await offsets(), pulled

    before, after, pulled = run(read())
    assert len(pulled) == len(settled.produced.sent)
    assert before == after and before


def test_a_write_only_dlq_is_made_readable(traffic, mqadmin, names, create_topic, namesrv):
    # Brokers before 4.9.2 created DLQs write-only (perm 2); build one like that.
    topic = create_topic(dlq_topic(names.group("old")), queues=1, perm=2)

    async def scenario():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            mq = MessageQueue(topic, "broker-a", 0)
            await client.actions.send_message(topic, b"dead", queue=mq)
            with pytest.raises(NoPermission):
                await client.messages.pull(mq, 0)
            changed = await client.actions.make_topic_readable(topic)
            pulled = await client.messages.pull_range(mq, 0, 1)
            route = await client.topology.topic_route(topic, max_age=0)
            return changed, pulled, route, masters

    changed, pulled, route, _ = run(scenario())
    assert changed == ["broker-a", "broker-b"]
    assert [m.body for m in pulled] == [b"dead"]
    assert {q.perm for q in route.queue_datas} == {6}
    assert '"perm":6' in mqadmin.run("topicRoute", "-t", topic).out.replace(" ", "")
