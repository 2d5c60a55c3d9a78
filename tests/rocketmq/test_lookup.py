"""Message lookups against a byte-level fake cluster: what goes on the wire for VIEW_MESSAGE_BY_ID
(33), QUERY_MESSAGE (12) and QUERY_CONSUMER_OFFSET (14), and what is made of the answers (hash
collisions filtered, the time range exact, a capped answer named, a broker down named). The real
broker's answers to the same requests are compared with mqadmin in tests/messages/test_cluster.py."""

from __future__ import annotations

import pytest

from consumers.messages import lookup
from consumers.rocketmq import AdminClient, Credentials
from consumers.rocketmq.codes import RequestCode
from consumers.rocketmq.message import create_offset_msg_id
from consumers.rocketmq.models import MessageQueue
from tests.conftest import run
from tests.support.fake_cluster import FakeCluster

T0 = 1_700_000_000_000
UNIQ = "7F0000010C9C18B4AAC27D3A6E4F0001"


def scenario(cluster: FakeCluster, work, **options):
    async def go():
        await cluster.start()
        try:
            async with AdminClient(cluster.namesrv, request_timeout=2.0, **options) as client:
                return await work(client)
        finally:
            await cluster.stop()

    return run(go())


def offset_id(cluster: FakeCluster, broker: str, physical: int) -> str:
    host, port = cluster.address(broker).split(":")
    return create_offset_msg_id(host, int(port), physical)


def test_an_offset_id_is_read_at_the_broker_and_commit_log_offset_it_names():
    cluster = FakeCluster(brokers=("broker-a", "broker-b"))
    cluster.add("orders", "broker-a", 0, {"UNIQ_KEY": "A" * 32})
    wanted = cluster.add("orders", "broker-b", 1, {"UNIQ_KEY": UNIQ, "TAGS": "paid", "KEYS": "o-1 o-2"})

    found = scenario(cluster, lambda c: lookup.find_by_id(c, offset_id(cluster, "broker-b", wanted.physical_offset)))
    assert [(f.broker, f.message.properties["UNIQ_KEY"]) for f in found.messages] == [("broker-b", UNIQ)]
    assert found.messages[0].message.offset_msg_id == offset_id(cluster, "broker-b", wanted.physical_offset)
    views = cluster.sent(RequestCode.VIEW_MESSAGE_BY_ID)
    assert views == [("broker-b", {"offset": str(wanted.physical_offset)})]  # no topic given: none sent
    assert not cluster.sent(RequestCode.QUERY_MESSAGE)


def test_an_id_that_names_no_broker_of_the_cluster_is_not_viewed_and_needs_a_topic():
    cluster = FakeCluster()
    cluster.add("orders", "broker-a", 0, {"UNIQ_KEY": UNIQ})
    found = scenario(cluster, lambda c: lookup.find_by_id(c, UNIQ))  # decodes to 127.0.0.1:<not a broker port>
    assert found.messages == [] and "give the topic" in found.note
    assert not cluster.sent(RequestCode.VIEW_MESSAGE_BY_ID)


def test_a_client_id_is_looked_up_by_unique_key_with_the_java_flag_and_collisions_are_dropped():
    cluster = FakeCluster(brokers=("broker-a", "broker-b"))
    cluster.add("orders", "broker-a", 0, {"UNIQ_KEY": "B" * 32}, collide=True)  # same hash slot, other id
    cluster.add("other", "broker-b", 0, {"UNIQ_KEY": UNIQ})  # same id, other topic
    wanted = cluster.add("orders", "broker-b", 2, {"UNIQ_KEY": UNIQ}, store_ms=T0 + 5_500)

    found = scenario(cluster, lambda c: lookup.find_by_id(c, UNIQ, "orders"))
    assert [(f.broker, f.message.queue_id, f.message.queue_offset) for f in found.messages] == [
        ("broker-b", 2, wanted.queue_offset)
    ]
    queries = cluster.sent(RequestCode.QUERY_MESSAGE)
    assert sorted(b for b, _ in queries) == ["broker-a", "broker-b"]  # every broker of the topic
    assert queries[0][1] == {
        "topic": "orders", "key": UNIQ, "maxNum": "64", "beginTimestamp": "0", "endTimestamp": str(2**62),
        "_UNIQUE_KEY_QUERY": "true",
    }  # fmt: skip


def test_under_acl_the_unique_key_flag_is_left_out_of_the_signed_request():
    cluster = FakeCluster()
    cluster.add("orders", "broker-a", 0, {"UNIQ_KEY": UNIQ})

    scenario(cluster, lambda c: c.messages.query_by_unique_key("orders", UNIQ),
             credentials=Credentials("ak", "sk"))  # fmt: skip
    (_, fields), *_ = cluster.sent(RequestCode.QUERY_MESSAGE)
    assert "_UNIQUE_KEY_QUERY" not in fields and "Signature" in fields


def test_a_key_query_asks_a_second_wider_and_keeps_exactly_the_range_and_the_key():
    cluster = FakeCluster()
    inside = cluster.add("orders", "broker-a", 0, {"KEYS": "order-7 customer-3"}, store_ms=T0 + 2_000)
    cluster.add("orders", "broker-a", 1, {"KEYS": "order-7"}, store_ms=T0 + 1_500)  # before the range
    cluster.add("orders", "broker-a", 1, {"KEYS": "order-70"}, store_ms=T0 + 2_100, collide=True)
    cluster.add("orders", "broker-a", 2, {"KEYS": "order-7"}, store_ms=T0 + 9_000)  # after it

    found = scenario(cluster, lambda c: lookup.find_by_key(c, "orders", "order-7", T0 + 2_000, T0 + 8_000))
    assert [f.message.physical_offset for f in found.messages] == [inside.physical_offset]
    (_, fields), *_ = cluster.sent(RequestCode.QUERY_MESSAGE)
    # the index keeps whole seconds after its file began: asked from a second before
    assert (fields["beginTimestamp"], fields["endTimestamp"], fields["maxNum"]) == (
        str(T0 + 1_000),
        str(T0 + 8_000),
        "64",
    )
    assert "_UNIQUE_KEY_QUERY" not in fields and not found.problems


def test_a_broker_that_answers_all_it_may_is_named_and_one_that_fails_too():
    cluster = FakeCluster(brokers=("broker-a", "broker-b"))
    for i in range(70):
        cluster.add("orders", "broker-a", i % 4, {"KEYS": "hot"})
    cluster.failing.add(("broker-b", RequestCode.QUERY_MESSAGE))

    found = scenario(cluster, lambda c: lookup.find_by_key(c, "orders", "hot"))
    assert len(found.messages) == 64
    assert any("broker-a answered as many" in p for p in found.problems)
    assert any(p.startswith("broker-b could not be read: BrokerSystemError") for p in found.problems)

    def strict(client):
        return client.messages.query_by_key("orders", "hot")

    cluster = FakeCluster(brokers=("broker-a", "broker-b"))
    cluster.add("orders", "broker-a", 0, {"KEYS": "hot"})
    cluster.failing.add(("broker-b", RequestCode.QUERY_MESSAGE))
    with pytest.raises(Exception, match="injected failure"):
        scenario(cluster, strict)  # the old API: never "not there" while a broker was not read


def test_an_offset_id_pointing_inside_a_record_is_no_message():
    cluster = FakeCluster(view_reads_on=True)
    real = cluster.add("orders", "broker-a", 0, {"UNIQ_KEY": UNIQ})

    async def work(client):
        forged = offset_id(cluster, "broker-a", real.physical_offset - 7)  # the broker reads the record beyond it
        return await client.messages.view_offset_id(forged), await lookup.find_by_id(client, forged, "orders")

    viewed, found = scenario(cluster, work)
    assert viewed is None
    assert found.messages == [] and found.note == "no message of the topic has this id"  # then the index


def test_find_at_reads_one_message_and_says_why_when_there_is_none():
    cluster = FakeCluster()
    for i in range(3):
        cluster.add("orders", "broker-a", 1, {"UNIQ_KEY": f"{i:032X}"})

    async def work(client):
        return [await lookup.find_at(client, "orders", "broker-a", 1, o) for o in (2, 3)] + [
            await lookup.find_at(client, "orders", "broker-b", 0, 0),
            await lookup.find_at(client, "orders", "broker-a", 9, 0),
        ]

    at_2, at_3, no_broker, no_queue = scenario(cluster, work)
    assert at_2.messages[0].message.properties["UNIQ_KEY"] == f"{2:032X}"
    assert at_3.messages == [] and "next offset is 3" in at_3.note
    assert "no queues on broker-b" in no_broker.note and "queues 0 to 1" in no_queue.note
    pull = cluster.sent(RequestCode.PULL_MESSAGE)[0][1]
    assert (pull["consumerGroup"], pull["queueOffset"], pull["maxMsgNums"], pull["sysFlag"]) == (
        "TOOLS_CONSUMER", "2", "1", "4")  # fmt: skip


def test_committed_offsets_are_asked_without_zero_for_missing_and_missing_is_none():
    cluster = FakeCluster()
    cluster.add("orders", "broker-a", 0, {})
    cluster.offsets[("g1", "orders", "broker-a", 0)] = 5

    async def work(client):
        address = cluster.address("broker-a")
        mq = MessageQueue("orders", "broker-a", 0)
        return await client.progress.consumer_offsets_many([("g1", mq, address), ("g2", mq, address)])

    assert scenario(cluster, work) == [5, None]
    assert cluster.sent(RequestCode.QUERY_CONSUMER_OFFSET)[1][1] == {
        "consumerGroup": "g2", "topic": "orders", "queueId": "0", "setZeroIfNotFound": "false"}  # fmt: skip


def test_a_time_page_runs_oldest_first_across_queues_and_the_cursor_resumes_exactly():
    cluster = FakeCluster(brokers=("broker-a", "broker-b"))
    stamps = {}
    for i in range(12):  # interleaved over four queues, one per second
        broker, queue = ("broker-a", "broker-b")[i % 2], (i // 2) % 2
        stamps[i] = cluster.add("orders", broker, queue, {"UNIQ_KEY": f"{i:032X}"}, store_ms=T0 + 1000 * i)
    begin, end = T0 + 2_000, T0 + 10_000  # messages 2..10

    async def pages(client):
        seen, cursor = [], None
        for _ in range(10):
            page = await lookup.read_time_page(client, "orders", begin, end, cursor=cursor, size=4)
            seen.append([int(f.message.properties["UNIQ_KEY"], 16) for f in page.messages])
            if not page.more:
                return seen, page.total
            cursor = page.cursor
        raise AssertionError("no last page")

    seen, total = scenario(cluster, pages)
    assert seen == [[2, 3, 4, 5], [6, 7, 8, 9], [10]]
    assert total == 9
    searches = cluster.sent(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)
    assert {f["timestamp"] for _, f in searches} == {str(begin), str(end + 1)}


def test_a_message_not_found_by_offset_id_is_not_found_not_garbage():
    cluster = FakeCluster()
    real = cluster.add("orders", "broker-a", 0, {"UNIQ_KEY": UNIQ})

    async def work(client):
        beside = offset_id(cluster, "broker-a", real.physical_offset + 5)  # past every message: SYSTEM_ERROR
        return await client.messages.view_offset_id(beside), await client.messages.view(UNIQ, topic="orders")

    missing, by_client_id = scenario(cluster, work)
    assert missing is None
    assert by_client_id.physical_offset == real.physical_offset
    assert [r.code for _, r in cluster.requests if r.code in (33, 12)] == [33, 12]
