"""Actions against the real cluster: offsets, resets on both broker paths, sends, direct
consumption, topic and group configs."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from consumers.rocketmq import AdminClient, RocketMQError
from consumers.rocketmq.codes import retry_topic
from consumers.rocketmq.models import MessageQueue, Outgoing, SubscriptionGroupConfig, TopicConfig
from devstack.mqadmin import parse_consumer_config, parse_consumer_progress, parse_reset_offset, parse_topic_status
from tests.conftest import run
from tests.support.scenarios import wait, wait_committed

pytestmark = pytest.mark.broker


@pytest.fixture
def two_batches(traffic, names, create_topic):
    """20 messages, a known instant, 20 more: the first offset at or after that instant in
    each queue is the number of first-batch messages the harness put there."""
    topic = create_topic(names.topic("batches"))
    first = traffic.produce(topic, 20)
    time.sleep(1.2)
    instant = int(time.time() * 1000)
    time.sleep(1.2)
    second = traffic.produce(topic, 20)
    expected = Counter((m.broker, m.queue_id) for m in first.sent)
    queues = {(m.broker, m.queue_id) for m in first.sent + second.sent}
    return topic, instant, {q: expected.get(q, 0) for q in queues}, first.sent + second.sent


def _consumed_group(traffic, mqadmin, group, topic, *, stop: bool):
    consumer = traffic.consume(group, topic)
    consumer.wait_acked(40)
    wait_committed(mqadmin, group, topic, diff=0)
    if stop:
        consumer.stop()
    return consumer


def test_search_offset_by_timestamp_agrees_with_the_harness_and_mqadmin(two_batches, namesrv, mqadmin, traffic, names):
    topic, instant, expected, _ = two_batches
    group = names.group("search")
    _consumed_group(traffic, mqadmin, group, topic, stop=True)

    async def search():
        async with AdminClient(namesrv) as client:
            return {
                (b, q): await client.actions.search_offset(MessageQueue(topic, b, q), instant) for (b, q) in expected
            }

    assert run(search()) == expected
    # mqadmin's reset computes the same targets (and applies them to this throwaway group)
    printed = parse_reset_offset(mqadmin.run("resetOffsetByTime", "-g", group, "-t", topic, "-s", str(instant)).out)
    assert printed == expected


def test_reset_of_an_offline_group_on_the_server_side_path(two_batches, namesrv, mqadmin, traffic, names):
    topic, instant, expected, _ = two_batches
    group = names.group("offline")
    _consumed_group(traffic, mqadmin, group, topic, stop=True)

    async def reset():
        async with AdminClient(namesrv) as client:
            return await client.actions.reset_offset_by_timestamp(group, topic, instant)

    result = run(reset())
    assert result.ok and {b.path for b in result.brokers} == {"server"}
    assert {(mq.broker_name, mq.queue_id): o for mq, o in result.offsets.items()} == expected
    progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
    assert {(r.broker, r.queue_id): r.consumer_offset for r in progress.rows if r.topic == topic} == expected


def test_reset_with_the_consumer_online_redelivers_from_the_new_offsets(two_batches, namesrv, mqadmin, traffic, names):
    topic, instant, expected, sent = two_batches
    group = names.group("online")
    consumer = _consumed_group(traffic, mqadmin, group, topic, stop=False)

    async def reset():
        async with AdminClient(namesrv) as client:
            return await client.actions.reset_offset_by_timestamp(group, topic, instant)

    result = run(reset())
    assert result.ok and {b.path for b in result.brokers} == {"server"}
    second_batch = {m.msg_id for m in sent if m.queue_offset >= expected[(m.broker, m.queue_id)]}
    assert len(second_batch) == 20

    def redelivered() -> bool:
        return len(consumer.events("acked")) >= 60

    wait(redelivered, 60, "the second batch delivered again")
    again = consumer.events("acked")[40:]
    assert {e["msgId"] for e in again} == second_batch
    for e in again:  # every queue restarted exactly at its reset offset
        assert e["queueOffset"] >= expected[(e["broker"], e["queueId"])]


@pytest.fixture
def client_notify_reset(mqadmin):
    """Switch the brokers to 4.x reset semantics (notify the clients) for one test."""
    mqadmin.run("updateBrokerConfig", "-c", "DefaultCluster", "-k", "useServerSideResetOffset", "-v", "false")
    yield
    mqadmin.run("updateBrokerConfig", "-c", "DefaultCluster", "-k", "useServerSideResetOffset", "-v", "true")


def test_reset_on_the_4x_path_notifies_online_clients_and_writes_offline_groups(
    client_notify_reset, two_batches, namesrv, mqadmin, traffic, names
):
    topic, instant, expected, _ = two_batches
    offline = names.group("old-offline")
    online = names.group("old-online")
    _consumed_group(traffic, mqadmin, offline, topic, stop=True)
    consumer = _consumed_group(traffic, mqadmin, online, topic, stop=False)

    async def reset(group):
        async with AdminClient(namesrv) as client:
            return await client.actions.reset_offset_by_timestamp(group, topic, instant)

    offline_result = run(reset(offline))
    assert offline_result.ok and {b.path for b in offline_result.brokers} == {"offline"}
    progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", offline).out)
    assert {(r.broker, r.queue_id): r.consumer_offset for r in progress.rows if r.topic == topic} == expected

    online_result = run(reset(online))
    assert online_result.ok and {b.path for b in online_result.brokers} == {"client"}
    assert {(mq.broker_name, mq.queue_id): o for mq, o in online_result.offsets.items()} == expected
    # the Java client pauses about 10 s, then consumes again from the new offsets
    wait(lambda: len(consumer.events("acked")) >= 60, 90, "second batch redelivered after the client reset")


def test_update_consumer_offset_of_an_offline_group(two_batches, namesrv, mqadmin, traffic, names):
    topic, _, _, _ = two_batches
    group = names.group("commit")
    _consumed_group(traffic, mqadmin, group, topic, stop=True)
    target = MessageQueue(topic, "broker-b", 2)

    async def commit():
        async with AdminClient(namesrv) as client:
            return await client.actions.update_consumer_offset(group, target, 1)

    assert run(commit()) is True
    row = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out).row(topic, "broker-b", 2)
    assert row.consumer_offset == 1


def test_sent_messages_reach_consumers_also_through_the_retry_topic(traffic, names, create_topic, namesrv):
    topic = create_topic(names.topic("send"))
    group = names.group("send")
    consumer = traffic.consume(group, topic)

    async def send():
        async with AdminClient(namesrv) as client:
            plain = await client.actions.send_message(topic, "é body".encode(), tags="TagZ", keys=["k-1", "k-2"])
            big = await client.actions.send_message(topic, b"z" * 20000, keys=["big"])
            retried = await client.actions.send_message(
                retry_topic(group),
                b"redriven",
                keys=["k-retry"],
                properties={"RETRY_TOPIC": topic},
                reconsume_times=3,
                max_reconsume_times=16,
            )
            return plain, big, retried

    plain, big, retried = run(send())
    assert {plain.status, big.status, retried.status} == {"SEND_OK"}
    wait(lambda: len(consumer.events("acked")) >= 3, 60, "three messages consumed")
    by_id = {e["msgId"]: e for e in consumer.events("acked")}
    assert by_id[plain.msg_id]["key"] == "k-1 k-2" and by_id[plain.msg_id]["tags"] == "TagZ"
    assert by_id[big.msg_id]["topic"] == topic
    # through %RETRY%: the client restores the original topic and keeps the reconsume count
    assert by_id[retried.msg_id]["topic"] == topic and by_id[retried.msg_id]["reconsumeTimes"] == 3


def test_batched_sends_spread_over_the_queues_and_report_each_outcome(traffic, names, create_topic, namesrv, mqadmin):
    topic, group = create_topic(names.topic("many"), queues=4), names.group("many")
    read_only = create_topic(names.topic("many-ro"), perm=4)
    consumer = traffic.consume(group, topic)
    batch = [Outgoing(topic, f"m{i}".encode(), {"KEYS": f"k-{i}"}, unique_key=f"{i:032X}") for i in range(200)]
    batch.append(Outgoing(read_only, b"refused", {}))
    # %RETRY% topics take no batches: these go one by one, and reach the group as its retries
    batch += [Outgoing(retry_topic(group), f"r{i}".encode(), {"KEYS": f"r-{i}", "RETRY_TOPIC": topic},
                       reconsume_times=0) for i in range(3)]  # fmt: skip

    async def send():
        async with AdminClient(namesrv) as client:
            results = await client.actions.send_messages(batch)
            # each offset id names its own message: the broker's comma-joined ids are in order
            viewed = [await client.messages.view(r.offset_msg_id) for r in results[:200:13] + results[199:200]]
            return results, viewed

    (*sent, refused, r0, r1, r2), viewed = run(send())
    assert [r.msg_id for r in sent] == [f"{i:032X}" for i in range(200)] and {r.status for r in sent} == {"SEND_OK"}
    assert isinstance(refused, RocketMQError) and "no writable queue" in str(refused)  # typed, not raised
    assert {r0.status, r1.status, r2.status} == {"SEND_OK"} and r0.queue.topic == retry_topic(group)
    expected = [i for i in range(0, 200, 13)] + [199]
    assert [(m.properties["UNIQ_KEY"], m.body, m.keys) for m in viewed] == [
        (f"{i:032X}", f"m{i}".encode(), [f"k-{i}"]) for i in expected
    ]
    assert [m.queue_offset for m in viewed] == [sent[i].queue_offset for i in expected]
    # round robin over 2 brokers x 4 queues: 25 each, where mqadmin's topicStatus counts them
    status = parse_topic_status(mqadmin.run("topicStatus", "-t", topic).out)
    stored = {(row.broker, row.queue_id): row.max_offset - row.min_offset for row in status}
    assert Counter((r.queue.broker_name, r.queue.queue_id) for r in sent) == stored
    assert len(stored) == 8 and set(stored.values()) == {25}
    wait(lambda: len(consumer.events("acked")) >= 203, 60, "all consumed")
    assert {e["key"] for e in consumer.events("acked")} == {f"k-{i}" for i in range(200)} | {f"r-{i}" for i in range(3)}


def test_consume_message_directly_runs_a_live_consumers_listener(traffic, names, create_topic, namesrv):
    topic = create_topic(names.topic("direct"))
    group = names.group("direct")
    produced = traffic.produce(topic, 5)
    consumer = traffic.consume(group, topic)
    consumer.wait_acked(5)
    target = produced.sent[3]

    async def direct():
        async with AdminClient(namesrv) as client:
            by_offset_id = await client.actions.consume_message_directly(
                group, consumer.client_id, target.offset_msg_id, topic=topic
            )
            by_client_id = await client.actions.consume_message_directly(
                group, consumer.client_id, target.msg_id, topic=topic
            )
            return by_offset_id, by_client_id

    first, second = run(direct())
    assert first.consume_result == second.consume_result == "CR_SUCCESS"
    # the normal delivery and the two direct ones (events arrive asynchronously)
    wait(lambda: len([e for e in consumer.events("acked") if e["key"] == target.key]) >= 3, 10, "3 runs")
    runs = [e for e in consumer.events("acked") if e["key"] == target.key]
    assert [e["msgId"] for e in runs] == [target.msg_id] * 3


def test_create_a_topic_and_update_a_subscription_group(names, namesrv, mqadmin):
    topic = names.topic("created")
    group = names.group("configured")

    async def configure():
        async with AdminClient(namesrv) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            await client.actions.create_or_update_topic(TopicConfig(topic, 3, 3), masters)
            await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig(group), masters)
            current = (await client.topology.subscription_groups(masters[0]))[group]
            current.retry_max_times = 5
            await client.actions.create_or_update_subscription_group(current, masters)
            route = await client.topology.topic_route(topic, max_age=0)
            return route

    route = run(configure())
    assert {(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas} == {
        ("broker-a", 3, 3),
        ("broker-b", 3, 3),
    }
    config = parse_consumer_config(mqadmin.run("getConsumerConfig", "-g", group).out)
    assert {broker: c["retryMaxTimes"] for broker, c in config.items()} == {"broker-a": "5", "broker-b": "5"}
    # fields we do not model survive the read-modify-write
    assert {c["consumeTimeoutMinute"] for c in config.values()} == {"15"}
