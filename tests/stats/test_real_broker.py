"""The statistics job over history polled from the real broker: what the harness says each
group consumed, and what mqadmin says reached the DLQ, equal the job's numbers for today."""

from __future__ import annotations

import time
import uuid

import pytest
from django.utils import timezone

from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.stats.models import GroupDay, StatsRun
from consumers.stats.runs import RunRequest, execute_run, request_run
from tests.support.scenarios import dlq_size, wait, wait_committed

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
FIRST_BATCH, SECOND_BATCH, MAX_RECONSUME = 24, 40, 2


def first_deliveries(consumer, sent_ids: set[str]) -> set[str]:
    return {e["msgId"] for e in consumer.deliveries if e["reconsumeTimes"] == 0 and e["msgId"] in sent_ids}


def test_consumed_and_dead_letters_of_a_polled_day(traffic, mqadmin, namesrv, redis, history_dir, settings, tmp_path):
    settings.STATS_OUTPUT_URL = str(tmp_path / "stats")
    settings.STATS_RUN_DIR = tmp_path / "runs"
    settings.STATS_DRIVER_MEMORY = "1g"
    suffix = uuid.uuid4().hex[:6]
    topic = f"T-stats-{suffix}"
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4")
    healthy = traffic.consume(f"G-stats-ok-{suffix}", topic, mode="healthy")
    failing = traffic.consume(f"G-stats-fail-{suffix}", topic, mode="failing", failEvery=5,
                              maxReconsumeTimes=MAX_RECONSUME)  # fmt: skip
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)

    # a settled first batch: every queue committed, the retry topics exist on both brokers
    first = traffic.produce(topic, FIRST_BATCH, keyPrefix=f"a{suffix}-")
    first_doomed = sum(1 for i in range(FIRST_BATCH) if i % 5 == 0)
    wait(lambda: dlq_size(mqadmin, failing.group) == first_doomed, 120, "first dead letters")
    for consumer in (healthy, failing):
        wait_committed(mqadmin, consumer.group, topic, diff=0, retry=True)
    assert poll_cluster(cluster).status in ("ok", "degraded")
    dlq_before = dlq_size(mqadmin, failing.group)

    # the second batch while polling, then everything settles and a last poll sees it
    second = traffic.produce(topic, SECOND_BATCH, keyPrefix=f"b{suffix}-", wait=False)
    for _ in range(4):
        time.sleep(2)
        poll_cluster(cluster)
    second.wait_done()
    second_doomed = sum(1 for i in range(SECOND_BATCH) if i % 5 == 0)
    wait(lambda: dlq_size(mqadmin, failing.group) == first_doomed + second_doomed, 120, "second dead letters")
    for consumer in (healthy, failing):
        wait_committed(mqadmin, consumer.group, topic, diff=0, retry=True)
    poll_cluster(cluster)
    dlq_after = dlq_size(mqadmin, failing.group)

    today = timezone.now().date()
    run = execute_run(request_run(RunRequest(today, today, "local"), trigger="command").pk)
    assert run.state == StatsRun.State.SUCCEEDED, run.error_tail

    second_ids = {m.msg_id for m in second.sent}
    assert first.sent and len(second_ids) == SECOND_BATCH
    for consumer in (healthy, failing):
        row = GroupDay.objects.get(cluster="local", date=today, group=consumer.group)
        # the first poll saw the first batch consumed: what the day adds is the second batch
        assert row.consumed == len(first_deliveries(consumer, second_ids)) == SECOND_BATCH
        assert row.produced == SECOND_BATCH
    row = GroupDay.objects.get(cluster="local", date=today, group=failing.group)
    assert row.dlq_arrivals == dlq_after - dlq_before == second_doomed
    # every failed delivery but the last of a message went to %RETRY%: two per dead letter
    retried = [e for e in failing.deliveries if e["result"] == "later" and e["key"].startswith(f"b{suffix}-")
               and e["reconsumeTimes"] < MAX_RECONSUME]  # fmt: skip
    assert row.retries == len(retried) == 2 * second_doomed
    assert GroupDay.objects.get(cluster="local", date=today, group=healthy.group).dlq_arrivals == 0
