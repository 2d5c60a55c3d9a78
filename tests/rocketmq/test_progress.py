"""Progress operations against the real cluster, compared with mqadmin at the same moment."""

from __future__ import annotations

import datetime as dt

import pytest

from consumers.rocketmq import AdminClient, ConsumerNotOnline, group_progress
from consumers.rocketmq.codes import retry_topic
from consumers.rocketmq.models import MessageQueue
from devstack.mqadmin import parse_consumer_connection, parse_consumer_progress, parse_topic_status
from tests.conftest import run

pytestmark = pytest.mark.broker


def _mqadmin_time(millis: int | None) -> str | None:
    if not millis:
        return None
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _compare_with_mqadmin(namesrv: str, mqadmin, group: str):
    async def read():
        async with AdminClient(namesrv) as client:
            return await group_progress(client, group)

    ours = run(read())
    theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-s", "true").out)
    assert ours.complete, ours.problems
    assert theirs.rows, "mqadmin shows no rows: the comparison would prove nothing"
    assert [(q.topic, q.broker_name, q.queue_id) for q in ours.queues] == [
        (r.topic, r.broker, r.queue_id) for r in theirs.rows
    ]
    for q, r in zip(ours.queues, theirs.rows, strict=True):
        assert (q.broker_offset, q.consumer_offset, q.lag) == (r.broker_offset, r.consumer_offset, r.diff), r
        assert (q.pull_offset - q.consumer_offset) == r.inflight
        assert _mqadmin_time(q.last_consume_time) == r.last_time
        # mqadmin shows the IP part of the client id holding the queue
        assert [c.split("@")[0] for c in q.clients][:1] == ([r.client_ip] if r.client_ip else [])
    assert ours.diff_total == theirs.diff_total
    return ours, theirs


@pytest.mark.parametrize("which", ["healthy", "lagging", "failing", "stalled"])
def test_group_progress_equals_mqadmin_consumer_progress(settled, namesrv, mqadmin, which):
    consumer = getattr(settled, which)
    ours, _ = _compare_with_mqadmin(namesrv, mqadmin, consumer.group)
    assert {q.broker_name for q in ours.queues} == {"broker-a", "broker-b"}  # merged across masters
    assert ours.topics == [settled.topic]
    if which == "failing":
        assert ours.retry_queues and all(q.retry for q in ours.retry_queues)


def test_lag_of_each_group_is_what_the_harness_left_unconsumed(settled, namesrv):
    async def read(group):
        async with AdminClient(namesrv) as client:
            return await group_progress(client, group)

    produced = len(settled.produced.sent)
    assert run(read(settled.healthy.group)).total_lag == 0
    assert run(read(settled.lagging.group)).total_lag == produced - 20
    assert run(read(settled.failing.group)).total_lag == 0  # failures went to retry, then the DLQ
    stalled = run(read(settled.stalled.group))
    held = next(e for e in settled.stalled.deliveries if e["result"] == "held")
    pinned = next(q for q in stalled.main_queues if (q.broker_name, q.queue_id) == (held["broker"], held["queueId"]))
    # the held message pins its queue's committed offset while pulls go on past it
    assert pinned.consumer_offset == held["queueOffset"]
    assert pinned.pull_offset == pinned.broker_offset > pinned.consumer_offset


def test_consumer_connection_equals_mqadmin(settled, namesrv, mqadmin):
    group = settled.healthy.group

    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            return await client.progress.consumer_connection(group, masters["broker-b"])

    ours = run(read())
    theirs = parse_consumer_connection(mqadmin.run("consumerConnection", "-g", group).out)
    # mqadmin asks a random broker of the route; a client has one connection (port) per broker
    assert [(c.client_id, c.client_addr.split(":")[0], c.language, c.version_name) for c in ours.connections] == [
        (c.client_id, c.client_addr.split(":")[0], c.language, c.version) for c in theirs.connections
    ]
    assert {t: s.sub_string for t, s in ours.subscriptions.items()} == theirs.subscriptions
    assert (ours.consume_type, ours.message_model, ours.consume_from_where) == (
        theirs.consume_type,
        theirs.message_model,
        theirs.consume_from_where,
    )
    assert ours.client_ids == [settled.healthy.client_id]


def test_an_offline_group_is_not_online(settled, namesrv):
    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            with pytest.raises(ConsumerNotOnline):
                await client.progress.consumer_connection(settled.lagging.group, masters["broker-a"])
            return await group_progress(client, settled.lagging.group)

    progress = run(read())
    assert progress.online is False and progress.connection is None


def test_running_info_lists_the_queues_the_client_holds(settled, namesrv):
    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            return await client.progress.consumer_running_info(
                settled.healthy.group, settled.healthy.client_id, masters["broker-a"]
            )

    info = run(read())
    main = sorted(mq for mq in info.mq_table if mq.topic == settled.topic)
    assert main == [MessageQueue(settled.topic, b, q) for b in ("broker-a", "broker-b") for q in range(4)]
    assert info.consume_type == "CONSUME_PASSIVELY" and info.message_model == "CLUSTERING"
    assert info.allocation_strategy == "AllocateMessageQueueAveragely"
    assert {s.topic for s in info.subscriptions} == {settled.topic, retry_topic(settled.healthy.group)}
    # every message was consumed: the client's commit offsets are at the end of each queue
    sent_per_queue = {}
    for m in settled.produced.sent:
        sent_per_queue[(m.broker, m.queue_id)] = sent_per_queue.get((m.broker, m.queue_id), 0) + 1
    assert {(mq.broker_name, mq.queue_id): info.mq_table[mq].commit_offset for mq in main} == sent_per_queue


def test_queue_offsets_and_earliest_store_time(settled, namesrv, mqadmin):
    status = {
        (r.broker, r.queue_id): r for r in parse_topic_status(mqadmin.run("topicStatus", "-t", settled.topic).out)
    }
    first = next(m for m in settled.produced.sent if m.queue_offset == 0)
    first_store_time = next(e["storeTime"] for e in settled.healthy.events("acked") if e["msgId"] == first.msg_id)

    async def read():
        async with AdminClient(namesrv) as client:
            result = {}
            for broker, queue_id in status:
                mq = MessageQueue(settled.topic, broker, queue_id)
                result[(broker, queue_id)] = (
                    await client.progress.min_offset(mq),
                    await client.progress.max_offset(mq),
                )
            mq = MessageQueue(settled.topic, first.broker, first.queue_id)
            return result, await client.progress.earliest_store_time(mq)

    offsets, earliest = run(read())
    assert offsets == {key: (row.min_offset, row.max_offset) for key, row in status.items()}
    assert earliest == first_store_time


def test_query_consumer_offset_and_who_consumes_what(settled, namesrv, mqadmin):
    theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", settled.lagging.group).out)
    row = next(r for r in theirs.rows if r.topic == settled.topic)

    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            mq = MessageQueue(row.topic, row.broker, row.queue_id)
            offset = await client.progress.query_consumer_offset(settled.lagging.group, mq)
            never = await client.progress.query_consumer_offset("G-never-consumed", mq)
            topics = await client.progress.topics_of_group(settled.failing.group, masters["broker-a"])
            groups = await client.progress.groups_of_topic(settled.topic, masters["broker-a"])
            return offset, never, topics, groups

    offset, never, topics, groups = run(read())
    assert offset == row.consumer_offset and never is None
    assert {settled.topic, retry_topic(settled.failing.group)} <= set(topics)
    assert {c.group for c in settled.all} <= set(groups)
