"""Redrive targets against the real broker: back to an orderly group is refused, at planning
and again when the job starts, because the broker would put every message straight back into
the DLQ. Oracles: mqadmin topicStatus of the DLQ and of the retry topic."""

from __future__ import annotations

import pytest

from consumers.changes.workflow import Actor, ChangeRefused
from consumers.dlq import redrive, runner
from consumers.dlq.browse import Selection
from consumers.dlq.models import RedriveJob, RedrivenMessage
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import retry_topic
from devstack.mqadmin import parse_topic_status
from tests.conftest import run
from tests.dlq.test_dlq import fill_dlq
from tests.support.scenarios import dlq_size

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def stored(mqadmin, topic: str) -> int:
    out = mqadmin.run("topicStatus", "-t", topic, check=False).out
    return sum(r.max_offset - r.min_offset for r in parse_topic_status(out))


def plan(personas, cluster, group, target, target_topic=""):
    return redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group,
                                selection=Selection(), target=target, target_topic=target_topic, rate=500)  # fmt: skip


def test_the_broker_sends_retries_of_a_live_orderly_group_to_its_dlq(traffic, names, create_topic, namesrv, mqadmin):
    """What the refusal rests on, seen on the real broker: SEND_OK for %RETRY%, stored in %DLQ%."""
    topic, group = create_topic(names.topic("ord-why")), names.group("ord-why")
    consumer = traffic.consume(group, topic, orderly=True)
    traffic.produce(topic, 4)
    consumer.wait_acked(4)  # it holds its queue locks by now

    async def send_back():
        async with AdminClient(namesrv) as client:
            return await client.actions.send_message(retry_topic(group), b"back", keys=["back"],
                                                     properties={"RETRY_TOPIC": topic}, reconsume_times=0)  # fmt: skip

    result = run(send_back())
    assert result.status == "SEND_OK" and result.queue.topic == retry_topic(group)
    assert dlq_size(mqadmin, group) == 1 and stored(mqadmin, retry_topic(group)) == 0


def test_back_to_an_orderly_group_is_refused_and_other_targets_are_not(
    personas,
    cluster,
    traffic,
    names,
    create_topic,
    namesrv,
    mqadmin,
):
    topic, group, target = create_topic(names.topic("ord")), names.group("ord"), create_topic(names.topic("ord-to"))
    fill_dlq(mqadmin, namesrv, group, 20)
    consumer = traffic.consume(group, topic, orderly=True)
    traffic.produce(topic, 2)
    consumer.wait_acked(2)

    with pytest.raises(ChangeRefused, match=f"{group} consumes orderly .*straight back into its DLQ"):
        plan(personas, cluster, group, "group")
    assert not RedriveJob.objects.filter(group=group).exists()
    job = plan(personas, cluster, group, "topic", target)  # elsewhere is fine
    assert runner.run_job(job.pk).state == "done" and stored(mqadmin, target) == 20


def test_a_job_planned_before_an_orderly_consumer_came_online_fails_at_start_and_sends_nothing(
    personas,
    cluster,
    traffic,
    names,
    create_topic,
    namesrv,
    mqadmin,
):
    topic, group = create_topic(names.topic("ord-late")), names.group("ord-late")
    fill_dlq(mqadmin, namesrv, group, 20)
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", retry_topic(group), "-r", "1", "-w", "1")
    job = plan(personas, cluster, group, "group")  # nobody online yet: allowed
    consumer = traffic.consume(group, topic, orderly=True)
    traffic.produce(topic, 2)
    consumer.wait_acked(2)

    done = runner.run_job(job.pk)
    assert done.state == "failed" and "consumes orderly" in done.failures[-1]["error"]
    assert done.moved == 0 and not RedrivenMessage.objects.filter(job=done).exists()
    assert dlq_size(mqadmin, group) == 20 and stored(mqadmin, retry_topic(group)) == 0


def test_back_to_a_fifo_group_is_refused_from_its_config_with_no_client_online(
    personas, cluster, names, create_topic, namesrv, mqadmin
):
    """No client is online to say how it consumes: the subscription group's
    consumeMessageOrderly (a RocketMQ 5 FIFO group) is enough to refuse, and nothing is sent."""
    group, target = names.group("fifo"), create_topic(names.topic("fifo-to"))
    fill_dlq(mqadmin, namesrv, group, 5)
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", retry_topic(group), "-r", "1", "-w", "1")
    job = plan(personas, cluster, group, "group")  # not FIFO yet: allowed
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group, "-o", "true")
    done = runner.run_job(job.pk)  # planned before: refused when it starts
    assert done.state == "failed" and "FIFO group" in done.failures[-1]["error"]
    assert done.moved == 0 and stored(mqadmin, retry_topic(group)) == 0 and dlq_size(mqadmin, group) == 5
    with pytest.raises(ChangeRefused, match=f"{group} is a FIFO group .*consumeMessageOrderly"):
        plan(personas, cluster, group, "group")
    assert runner.run_job(plan(personas, cluster, group, "topic", target).pk).state == "done"
    assert stored(mqadmin, target) == 5
