"""A message's trace as the Java clients wrote it (enableMsgTrace), read through the console
and compared with mqadmin queryMsgTraceById.

The clients write to a customized trace topic the test creates. The default one,
RMQ_SYS_TRACE_TOPIC, is a system topic: only a broker started with traceTopicEnable makes it
(mqadmin updateTopic is refused), and without it the Java client's first trace records fail
("route not exist") and are lost until something creates it."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from consumers.messages import services
from consumers.models import Cluster
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db]
ROW = re.compile(r"^(Pub|Sub)\s+(\S+)\s+(\S+)\s+(\S+ \S+)\s+(\d+)ms\s+(\S+)\s*$")


def mqadmin_trace(mqadmin, msg_id: str, trace_topic: str) -> list[tuple]:
    """(type, group, cost ms, status) per row mqadmin prints."""
    out = mqadmin.run("queryMsgTraceById", "-i", msg_id, "-t", trace_topic, check=False).out
    return sorted((m[1], m[2], int(m[5]), m[6]) for line in out.splitlines() if (m := ROW.match(line.strip())))


def test_the_trace_of_a_sent_and_consumed_message_equals_mqadmins(
    traffic, names, create_topic, mqadmin, namesrv, client, personas, redis, settings
):
    topic, group, producer = create_topic(names.topic("trace"), queues=1), names.group("trace"), names.group("P")
    sink = settings.ROCKETMQ_TRACE_TOPIC = create_topic(names.topic("trace-sink"), queues=1)
    consumer = traffic.consume(group, topic, trace=True, traceTopic=sink)
    traced = traffic.produce(topic, 2, trace=True, traceTopic=sink, group=producer).sent
    untraced = traffic.produce(topic, 1).sent[0]
    consumer.wait_acked(3, timeout=90)
    sent = traced[0]
    # the clients flush their traces in batches: wait until mqadmin sees the consumption too
    wait(
        lambda: {r[0] for r in mqadmin_trace(mqadmin, sent.msg_id, sink)} == {"Pub", "Sub"},
        60,
        "the send's and consumer's trace",
    )
    oracle = mqadmin_trace(mqadmin, sent.msg_id, sink)

    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    found = services.message(cluster, topic, sent.broker, sent.queue_id, sent.queue_offset)
    trace = services.track_message(cluster, found).trace
    assert trace.topic == sink and not trace.note
    ours = sorted(
        [("Pub", p.group, p.cost_ms, "success" if p.success else "failed") for p in trace.published]
        + [("Sub", c.group, c.cost_ms, "success" if c.success else "failed") for c in trace.consumed]
    )
    assert ours == oracle and [r[:2] for r in ours] == [("Pub", producer), ("Sub", group)]
    assert trace.consumed[0].retry_times == 0 and trace.consumed[0].result == "SUCCESS"

    # sent by a producer that does not trace: only the (tracing) consumer's part is there, once
    # the consumer has flushed it (a batch of its own: once still missing right after the other showed)
    wait(lambda: [r[0] for r in mqadmin_trace(mqadmin, untraced.msg_id, sink)] == ["Sub"], 60, "the consume trace")
    plain = services.message(cluster, topic, untraced.broker, untraced.queue_id, untraced.queue_offset)
    half = services.track_message(cluster, plain).trace
    assert half.published == [] and [c.group for c in half.consumed] == [group]

    client.force_login(personas["viewer"])
    page = client.get(
        reverse("consumers:message-track", args=["local", topic, sent.broker, sent.queue_id, sent.queue_offset])
    ).content.decode()
    assert 'id="trace-events"' in page and f'data-event="consume" data-group="{group}"' in page
