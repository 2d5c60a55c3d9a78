"""The local cluster and the traffic harness are real: mqadmin agrees with what the harness
says it did."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from devstack.mqadmin import parse_consumer_progress, parse_topic_status
from tests.support.scenarios import wait_committed

pytestmark = pytest.mark.broker


def test_lagging_group_diff_equals_what_the_harness_left_unconsumed(traffic, mqadmin, names, create_topic):
    topic = create_topic(names.topic("lag"))
    group = names.group("lag")
    first = traffic.produce(topic, 100)
    lagging = traffic.consume(group, topic, mode="lagging", stopAfter=37)
    lagging.wait_acked(37)
    # Wait for the commit while still online. Offset commits are oneway: the periodic one
    # repeats every second, the one at shutdown gets one chance, and CI once saw it lost
    # (the broker kept offsets 25 behind what the consumer had acknowledged).
    wait_committed(mqadmin, group, topic, diff=100 - 37)
    lagging.stop()
    second = traffic.produce(topic, 25)

    sent = first.sent + second.sent
    acked = {e["msgId"]: (e["broker"], e["queueId"]) for e in lagging.events("acked")}
    assert len(sent) == 125 and len(acked) == 37

    progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
    assert progress.diff_total == len(sent) - len(acked) == 88

    # Per queue: what was sent there minus what the (single-threaded) consumer acknowledged.
    sent_per_queue = Counter((m.broker, m.queue_id) for m in sent)
    acked_per_queue = Counter(acked.values())
    rows = {(r.broker, r.queue_id): r for r in progress.rows if r.topic == topic}
    assert set(rows) == set(sent_per_queue)
    for queue, count in sent_per_queue.items():
        assert rows[queue].broker_offset == count
        assert rows[queue].diff == count - acked_per_queue[queue]


def test_failing_group_dead_letters_exactly_the_messages_it_failed(traffic, mqadmin, names, create_topic):
    topic = create_topic(names.topic("fail"))
    group = names.group("fail")
    produced = traffic.produce(topic, 30)
    failing = traffic.consume(group, topic, mode="failing", failEvery=4, maxReconsumeTimes=2)

    # The rule, applied to what was sent: keys whose number is a multiple of 4 always fail.
    doomed = {m.msg_id for m in produced.sent if int(m.key.rsplit("-", 1)[1]) % 4 == 0}
    assert len(doomed) == 8

    def dlq_count() -> int:
        out = mqadmin.run("topicStatus", "-t", f"%DLQ%{group}", check=False).out
        return sum(r.max_offset - r.min_offset for r in parse_topic_status(out))

    deadline = time.monotonic() + 90
    while dlq_count() < len(doomed) and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(2)  # nothing more may arrive
    assert dlq_count() == len(doomed)

    # Each doomed message was delivered maxReconsumeTimes + 1 = 3 times, every time failed.
    failed = [e for e in failing.deliveries if e["result"] == "later"]
    assert {e["msgId"] for e in failed} == doomed
    per_message = Counter(e["msgId"] for e in failed)
    assert set(per_message.values()) == {3}
    assert sorted({e["reconsumeTimes"] for e in failed}) == [0, 1, 2]
