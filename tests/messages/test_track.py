"""Tracking one message through every group of its topic, against a byte-level fake cluster:
each verdict from what the brokers and clients answer, with its evidence, and unknown (with
why) wherever something needed could not be read. The real cluster's groups are compared with
mqadmin in test_cluster.py."""

from __future__ import annotations

from consumers.messages.track import track
from consumers.messages.verdicts import Hint, Reading, Skip, judge, tag_matches
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import RequestCode
from consumers.rocketmq.message import decode_messages
from consumers.rocketmq.models import MessageQueue, SubscriptionData
from consumers.rocketmq.ops.messages import Located
from tests.conftest import run
from tests.support.fake_cluster import FakeCluster, connection, running_info

UNIQ = "7F0000010C9C18B4AAC27D3A6E4F0001"
SKIP_COPY = "5C1B0A0F2E1D4C3B2A1908F7E6D5C4B3"
SKIPS = {"g-skipped": Skip(7, SKIP_COPY), "g-skip-undone": Skip(8, "A" * 32)}
T0 = 1_700_000_000_000


def world() -> tuple[FakeCluster, object]:
    """orders: the message at offset 5 of broker-a queue 0 (tag "paid"), and a group for each verdict."""
    c = FakeCluster()
    for i in range(6):
        props = {"UNIQ_KEY": UNIQ if i == 5 else f"{i:032X}", "TAGS": "paid", "KEYS": f"order-{i}"}
        message = c.add("orders", "broker-a", 0, props, store_ms=T0 + i * 1000)
    mq = ("orders", "broker-a", 0)
    copy = {"UNIQ_KEY": UNIQ, "TAGS": "paid", "RETRY_TOPIC": "orders"}
    groups = {
        "g-done": 6, "g-behind": 2, "g-filter": 6, "g-retry": 6, "g-retried-ok": 6, "g-dead": 6, "g-sched": 6,
        "g-offline": 6, "g-sql": 6, "g-pop": 6, "g-grpc": 6, "g-skipped": 6, "g-skip-undone": 5,
    }  # fmt: skip
    for group, offset in groups.items():
        c.offsets[(group, *mq)] = offset
    # "orders": a name the brokers give as a consumer of the topic with nothing behind it
    c.consumers_of["orders"] = [*groups, "g-never", "g-broadcast", "TOOLS_CONSUMER", "orders"]
    for group in ("g-done", "g-behind", "g-retry", "g-retried-ok", "g-dead", "g-sched", "g-pop", "g-never",
                  "g-skipped", "g-skip-undone"):  # fmt: skip
        c.connections[group] = connection("orders")
    c.connections["g-filter"] = connection("orders", "shipped || refunded")
    c.connections["g-sql"] = connection("orders", "amount > 5", kind="SQL92")
    c.connections["g-broadcast"] = connection("orders", clients=("c1", "c2"), model="BROADCASTING")
    c.running[("g-broadcast", "c1")] = running_info({mq: 6})
    c.running[("g-broadcast", "c2")] = running_info({mq: 4})
    c.pop_modes["orders"] = {"g-pop": "POP"}
    later = T0 + 60_000
    c.add("%RETRY%g-retry", "broker-a", 0, copy, reconsume_times=1, store_ms=later)
    c.add("%RETRY%g-retried-ok", "broker-a", 0, copy, reconsume_times=1, store_ms=later)
    c.offsets[("g-retried-ok", "%RETRY%g-retried-ok", "broker-a", 0)] = 1
    c.offsets[("g-retry", "%RETRY%g-retry", "broker-a", 0)] = 0
    c.add("%RETRY%g-dead", "broker-a", 0, copy, reconsume_times=1, store_ms=later)
    c.add("%DLQ%g-dead", "broker-a", 0, {**copy, "ORIGIN_MESSAGE_ID": "X"}, reconsume_times=3, store_ms=later + 1)
    c.add("SCHEDULE_TOPIC_XXXX", "broker-a", 2, {**copy, "REAL_TOPIC": "%RETRY%g-sched", "DELAY": "3"},
          reconsume_times=1, store_ms=later)  # fmt: skip
    c.add("%RETRY%g-other", "broker-a", 0, {**copy, "UNIQ_KEY": "F" * 32}, store_ms=later, collide=True)
    # the console's skip copied it to the DLQ under an id of its own (skips.services.copy_of)
    c.add("%DLQ%g-skipped", "broker-a", 0, {"UNIQ_KEY": SKIP_COPY, "ORIGIN_MESSAGE_ID": UNIQ, "SKIP_REQUEST": "7"},
          store_ms=later + 2)  # fmt: skip
    return c, message


def run_track(cluster: FakeCluster, stored, hints=None, skips=None):
    async def go():
        await cluster.start()
        try:
            async with AdminClient(cluster.namesrv, request_timeout=2.0) as client:
                message = decode_messages(cluster.encode(stored))[0]
                return await track(client, Located("broker-a", message), hints=hints or {}, skips=skips)
        finally:
            await cluster.stop()

    return run(go())


def test_every_group_of_the_topic_gets_its_verdict_with_the_evidence():
    cluster, message = world()
    hints = {"g-grpc": Hint(consumption="grpc-simple", in_flight=0, polled_at=1_700_000_100, polled_offset=6)}
    skips = {group: Skip(s.change, s.copy_key) for group, s in SKIPS.items()}
    tracking = run_track(cluster, message, hints, skips)
    got = {g.group: g for g in tracking.groups}
    assert {g: t.verdict for g, t in got.items()} == {
        "g-done": "consumed",
        "g-behind": "not_yet",
        "g-filter": "filtered",
        "g-retry": "retry",
        "g-retried-ok": "consumed",
        "g-dead": "dlq",
        "g-sched": "retry",
        "g-offline": "consumed",
        "g-sql": "consumed",
        "g-pop": "popped",
        "g-grpc": "consumed",
        "g-never": "not_yet",
        "g-broadcast": "not_yet",
        "g-skipped": "skipped",
        "g-skip-undone": "not_yet",
        "orders": "unknown",
    }  # fmt: skip  (TOOLS_CONSUMER, a system group, is left out)
    assert got["g-done"].committed == 6 and "6 is past the message's offset 5" in got["g-done"].why
    assert got["g-behind"].ahead == 3 and "3 message(s) ahead" in got["g-behind"].why
    assert "its tag paid is not in the subscription 'shipped || refunded'" in got["g-filter"].why
    assert got["g-filter"].subscription == "TAG: shipped || refunded"
    retry = got["g-retry"]
    assert [(c.kind, c.topic, c.reconsume_times, c.committed) for c in retry.copies] == [
        ("retry", "%RETRY%g-retry", 1, 0)]  # fmt: skip
    assert "redelivery 1 waits at %RETRY%g-retry offset 0 on broker-a" in retry.why
    assert "after 1 redelivery(ies)" in got["g-retried-ok"].why
    assert [c.kind for c in got["g-dead"].copies] == ["retry", "dlq"] and "delivered 3 time(s)" in got["g-dead"].why
    assert "waits in SCHEDULE_TOPIC_XXXX for delay level 3" in got["g-sched"].why
    assert got["g-offline"].online is False and any("no client is online" in n for n in got["g-offline"].notes)
    assert any("SQL92 expression" in n for n in got["g-sql"].notes)
    assert "whether it was acknowledged is unknown" in got["g-pop"].why and got["g-pop"].consumption == "pop"
    assert "no message in flight: acknowledged" in got["g-grpc"].why
    assert got["g-never"].committed is None and "CONSUME_FROM_LAST_OFFSET" in got["g-never"].why
    broadcast = got["g-broadcast"]
    assert [(c.client_id, c.verdict, c.offset) for c in broadcast.clients] == [
        ("c1", "consumed", 6), ("c2", "not_yet", 4)]  # fmt: skip
    assert "1 of 2 client(s)" in broadcast.why
    skipped = got["g-skipped"]
    assert skipped.why == "skipped by change #7, its copy in %DLQ%g-skipped at broker-a#0 offset 0"
    assert [(c.kind, c.topic, c.offset, c.store_ms) for c in skipped.copies] == [
        ("dlq", "%DLQ%g-skipped", 0, T0 + 60_002)]  # fmt: skip
    undone = got["g-skip-undone"]
    assert undone.ahead == 0 and any("skipped by change #8, but" in n for n in undone.notes)
    assert "whether it is a group is unknown" in got["orders"].why and got["orders"].online is False
    assert tracking.problems == []


def test_what_the_track_asks_the_brokers():
    cluster, message = world()
    run_track(cluster, message)
    offsets = cluster.sent(RequestCode.QUERY_CONSUMER_OFFSET)
    assert ("g-done", "orders", "0", "false") in {
        (f["consumerGroup"], f["topic"], f["queueId"], f["setZeroIfNotFound"]) for _, f in offsets
    }
    assert "TOOLS_CONSUMER" not in {f["consumerGroup"] for _, f in offsets}
    searched = {f["topic"] for _, f in cluster.sent(RequestCode.QUERY_MESSAGE)}
    # only topics that exist: retry and DLQ topics of groups that have them, and the delay topic
    assert searched == {"%RETRY%g-retry", "%RETRY%g-retried-ok", "%RETRY%g-dead", "%DLQ%g-dead", "%DLQ%g-skipped",
                        "SCHEDULE_TOPIC_XXXX"}  # fmt: skip
    assert {f["key"] for _, f in cluster.sent(RequestCode.QUERY_MESSAGE)} == {UNIQ}


def test_a_group_whose_offsets_cannot_be_read_is_unknown_with_why_never_not_consumed():
    cluster, message = world()
    cluster.failing.add(("broker-a", RequestCode.QUERY_CONSUMER_OFFSET))
    tracking = run_track(cluster, message)
    got = {g.group: g for g in tracking.groups}
    assert got["g-done"].verdict == "unknown" and "injected failure" in got["g-done"].why
    assert got["g-dead"].verdict == "dlq"  # the copies still tell


def test_a_message_without_a_unique_key_says_its_copies_were_not_looked_for():
    cluster = FakeCluster()
    stored = cluster.add("orders", "broker-a", 0, {"TAGS": "paid"})
    cluster.consumers_of["orders"] = ["g"]
    cluster.offsets[("g", "orders", "broker-a", 0)] = 1
    cluster.connections["g"] = connection("orders")
    (group,) = run_track(cluster, stored).groups
    assert group.verdict == "consumed" and any("no UNIQ_KEY" in n for n in group.notes)


MQ = MessageQueue("orders", "broker-a", 0)


def test_tag_expressions_as_the_clients_read_them():
    def sub(expression, kind="TAG"):
        return SubscriptionData("orders", expression, kind)

    assert tag_matches(sub("*"), None) and tag_matches(sub(""), "x")
    assert tag_matches(sub("a || b"), "b") and tag_matches(sub(" a||b "), "a")
    assert tag_matches(sub("a || b"), "c") is False and tag_matches(sub("a"), None) is False
    assert tag_matches(sub("a > 1", "SQL92"), "a") is None


def test_a_broadcasting_group_with_no_client_online_is_unknown():
    r = Reading("g", MQ, 5, "paid", committed=None, hint=Hint(message_model="BROADCASTING"))
    t = judge(r)
    assert t.verdict == "unknown" and "no client is online" in t.why


def test_connection_unknown_is_said_and_the_offsets_still_judge():
    t = judge(Reading("g", MQ, 5, "paid", committed=9, connection_error="RequestTimeout: broker-a"))
    assert t.verdict == "consumed" and t.online is None
    assert any("who is connected could not be read" in n for n in t.notes)
