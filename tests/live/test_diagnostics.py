"""Allocation diagnostics on hand-built group progress."""

from __future__ import annotations

from consumers.live.diagnostics import allocation_by_client, broadcast_offsets, consumption, diagnose, pops_by_client
from consumers.rocketmq import GroupProgress, Problem, QueueProgress
from consumers.rocketmq.models import (
    ClientConnection,
    ConsumerConnection,
    ConsumerRunningInfo,
    MessageQueue,
    PopQueueInfo,
    ProcessQueueInfo,
    SubscriptionData,
    TopicOffset,
)


def queue_info(offset=0, dropped=False) -> ProcessQueueInfo:
    return ProcessQueueInfo(offset, 0, 0, 0, 0, False, dropped, 0, 0)


def running(queues, *, sub="*", strategy="AllocateMessageQueueAveragely", model="CLUSTERING") -> ConsumerRunningInfo:
    return ConsumerRunningInfo(
        properties={"allocateMessageQueueStrategy": f"org.x.{strategy}@1a2b", "messageModel": model},
        subscriptions=[SubscriptionData("T", sub), SubscriptionData("%RETRY%G", "*")],
        mq_table={mq: queue_info(offset) for mq, offset in queues.items()},
        status_table={},
    )


def progress(clients: dict[str, ConsumerRunningInfo], *, connections=None, model="CLUSTERING") -> GroupProgress:
    mqs = [MessageQueue("T", "broker-a", i) for i in range(4)]
    holders = {}
    for client_id, info in clients.items():
        for mq in info.mq_table:
            holders.setdefault(mq, []).append(client_id)
    result = GroupProgress(group="G", fetched_at=1.0)
    result.queues = [
        QueueProgress("T", mq.broker_name, mq.queue_id, 10, 5, 0, 5, None, tuple(holders.get(mq, ()))) for mq in mqs
    ]
    result.online = True
    result.connection = ConsumerConnection(
        connections=connections or [ClientConnection(c, f"127.0.0.1:{i}", "JAVA", 479) for i, c in enumerate(clients)],
        subscriptions={},
        consume_type="CONSUME_PASSIVELY",
        message_model=model,
        consume_from_where=None,
    )
    result.running_info = clients
    result.bounds = {mq: TopicOffset(0, 10, 0) for mq in mqs}
    return result


MQ = [MessageQueue("T", "broker-a", i) for i in range(4)]


def kinds(found) -> list[str]:
    return [d.kind for d in found]


def test_a_healthy_allocation_has_nothing_to_say():
    group = progress({"c1": running({MQ[0]: 1, MQ[1]: 1}), "c2": running({MQ[2]: 1, MQ[3]: 1})})
    assert diagnose(group) == []
    assert allocation_by_client(group) == {
        "c1": ["T@broker-a#0", "T@broker-a#1"],
        "c2": ["T@broker-a#2", "T@broker-a#3"],
    }


def test_two_connections_with_one_client_id_are_reported_with_the_queues_left_alone():
    # both processes call themselves 127.0.0.1@dup: the broker sees one client twice
    duplicate = [ClientConnection("127.0.0.1@dup", a, "JAVA", 479) for a in ("127.0.0.1:1", "127.0.0.1:2")]
    group = progress({"127.0.0.1@dup": running({MQ[0]: 1, MQ[1]: 1})}, connections=duplicate)
    found = diagnose(group)
    assert kinds(found) == ["duplicate-client-id", "unheld-queues"]
    assert "127.0.0.1@dup is used by 2 connections (127.0.0.1:1, 127.0.0.1:2)" in found[0].message
    assert found[1].message.startswith("2 of 4 queue(s) are held by no client while 1 client(s) are online")


def test_more_clients_than_queues_leaves_clients_idle():
    clients = {f"c{i}": running({MQ[i]: 1}) for i in range(4)}
    clients["c4"] = running({})
    found = diagnose(progress(clients))
    assert kinds(found) == ["clients-without-queues"]
    assert found[0].message.startswith("1 client(s) hold no queue (c4): the group has 5 clients for 4 queues")


def test_members_that_subscribe_differently_are_named():
    group = progress({"c1": running({MQ[0]: 1, MQ[1]: 1}), "c2": running({MQ[2]: 1, MQ[3]: 1}, sub="TagA")})
    [found] = diagnose(group)
    assert found.kind == "different-subscriptions"
    assert "c1: T (TAG *); c2: T (TAG TagA)" in found.message


def test_mixed_versions_and_allocation_strategies():
    connections = [ClientConnection("c1", "a:1", "JAVA", 479), ClientConnection("c2", "a:2", "JAVA", 401)]
    group = progress(
        {
            "c1": running({MQ[0]: 1, MQ[1]: 1}),
            "c2": running({MQ[2]: 1, MQ[3]: 1}, strategy="AllocateMessageQueueByConfig"),
        },
        connections=connections,
    )
    found = diagnose(group)
    assert kinds(found) == ["mixed-versions", "mixed-allocation-strategies"]
    assert found[0].message == "Mixed client versions: V4_9_4 (1), V5_3_3 (1)"
    assert "AllocateMessageQueueAveragely (1), AllocateMessageQueueByConfig (1)" in found[1].message


def test_broadcasting_groups_get_offsets_per_client():
    every = {mq: 4 for mq in MQ}
    group = progress(
        {"c1": running(every, model="BROADCASTING"), "c2": running({**every, MQ[0]: 10}, model="BROADCASTING")},
        model="BROADCASTING",
    )
    assert kinds(diagnose(group)) == ["broadcasting"]
    offsets = broadcast_offsets(group)
    assert offsets["c1"][0] == {"queue": "T@broker-a#0", "commit_offset": 4, "max_offset": 10, "lag": 6}
    assert offsets["c2"][0]["lag"] == 0


def test_clients_that_did_not_answer_make_the_allocation_unknown_not_wrong():
    group = progress(
        {"c1": running({MQ[0]: 1})}, connections=[ClientConnection(c, "a:1", "JAVA", 479) for c in ("c1", "c2")]
    )
    group.problems.append(Problem("running-info", "c2", "timeout", "RequestTimeout"))
    found = diagnose(group)
    assert kinds(found) == ["running-info-unknown"]  # no "unheld queues": c2 may hold them


def popping(table: dict) -> ConsumerRunningInfo:
    """A remoting client switched to POP: it holds no queue and reports the queues it pops from."""
    info = running({})
    info.pop_table = {mq: PopQueueInfo(wait_ack, False, last_ms) for mq, (wait_ack, last_ms) in table.items()}
    return info


def test_remoting_pop_clients_hold_no_queue_and_that_is_no_warning_but_a_silent_queue_is():
    """The issue's false warnings ("16 of 16 queues held by no client", "1 client holds no
    queue") are gone for a group in POP mode; a queue nobody popped from for 120 s is named."""
    now_ms = 1_000_000
    # c1 pops every queue of broker-a (queue id -1), c2 pops queue 1 alone
    group = progress({"c1": popping({MessageQueue("T", "broker-a", -1): (3, now_ms - 5_000)}),
                      "c2": popping({MQ[1]: (2, now_ms - 1_000)})})  # fmt: skip
    group.fetched_at = now_ms / 1000
    assert consumption(group) == "pop"
    found = diagnose(group)
    assert kinds(found) == ["assigned-by-broker", "pop-drops-failures"], [d.message for d in found]
    assert "maxReconsumeTimes (16 (default))" in found[1].message
    assert pops_by_client(group) == {
        "c1": [{"queue": "T@broker-a#any", "wait_ack": 3, "last_pop_ms": now_ms - 5_000}],
        "c2": [{"queue": "T@broker-a#1", "wait_ack": 2, "last_pop_ms": now_ms - 1_000}],
    }
    # c1 went quiet 200 s ago: queues 0, 2 and 3 have had no pop within the 120 s
    group.running_info["c1"].pop_table = {MessageQueue("T", "broker-a", -1): PopQueueInfo(0, False, now_ms - 200_000)}
    [silent] = [d for d in diagnose(group) if d.kind == "unpopped-queues"]
    assert silent.severity == "warn" and silent.message.startswith("3 of 4 queue(s) have not been popped from")
    assert "T@broker-a#0" in silent.message and "T@broker-a#1" not in silent.message
    # the brokers' request modes alone make it POP too (a client that has not popped yet)
    quiet = progress({"c3": running({})})
    assert consumption(quiet) == "push"
    quiet.connection.subscriptions = {"T": None}
    quiet.pop_topics = ["T"]
    assert consumption(quiet) == "pop" and kinds(diagnose(quiet)) == ["assigned-by-broker", "unpopped-queues"]


def test_remoting_pop_in_flight_is_what_the_clients_wait_to_ack_and_unknown_if_one_is_silent():
    from consumers.live.building import build_document

    group = progress({"c1": popping({MQ[0]: (3, 1)}), "c2": popping({MQ[1]: (4, 1)})})
    doc = build_document(group, lag_times={}, dlq_count=0, previous=None)
    assert (doc.consumption, doc.in_flight, doc.in_flight_note) == ("pop", 7, None)
    assert doc.allocation == {} and doc.pops["c2"][0]["wait_ack"] == 4
    assert "nobody has popped" in doc.lag_seconds_measures
    del group.running_info["c2"]
    doc = build_document(group, lag_times={}, dlq_count=0, previous=None)
    assert doc.in_flight is None and "not every client" in doc.in_flight_note
