"""Polling the real cluster: numbers equal mqadmin's, diagnostics, health over the window,
history read back."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from consumers.live import poll, snapshots
from consumers.live.config import history_store
from consumers.live.history import GROUP_STATS, QUEUE_OFFSETS
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from devstack.mqadmin import parse_consumer_progress, parse_topic_status
from devstack.traffic import Harness
from tests.conftest import SESSION_DIR
from tests.support.scenarios import wait

pytestmark = pytest.mark.broker


@pytest.fixture
def cluster(db, redis, history_dir, namesrv, settings):
    settings.HEALTH_WINDOW_SECONDS = 120
    settings.HEALTH_STALL_SECONDS = 3
    settings.HEALTH_MIN_SAMPLES = 3
    settings.HEALTH_RETRY_RATE_PER_MINUTE = 10
    return Cluster.objects.create(name="local", namesrv_addrs=namesrv)


def detail(redis, cluster, group) -> dict | None:
    """The group's document as the API shows it (its wire form)."""
    doc = snapshots.read_detail(redis, cluster.pk, group)
    return doc.to_wire() if doc else None


def test_a_poll_stores_what_mqadmin_shows(cluster, redis, settled, mqadmin):
    result = poll_cluster(cluster)
    assert result.status in ("ok", "degraded") and result.groups >= 4
    for consumer in settled.all:
        doc = detail(redis, cluster, consumer.group)
        theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", consumer.group).out)
        assert theirs.rows
        ours = {(q["topic"], q["broker"], q["queue_id"]): (q["max"], q["consumer"], q["lag"]) for q in doc["queues"]}
        assert ours == {
            (r.topic, r.broker, r.queue_id): (r.broker_offset, r.consumer_offset, r.diff) for r in theirs.rows
        }
        main_diff = sum(r.diff for r in theirs.rows if not r.topic.startswith("%RETRY%"))
        assert (doc["lag"], doc["lag"] + doc["retry_lag"]) == (main_diff, theirs.diff_total)
    status = {
        (r.broker, r.queue_id): r.min_offset
        for r in parse_topic_status(mqadmin.run("topicStatus", "-t", settled.topic).out)
    }
    doc = detail(redis, cluster, settled.healthy.group)
    assert {(q["broker"], q["queue_id"]): q["min"] for q in doc["queues"] if not q["retry"]} == status
    assert doc["clients"] == 1 and doc["online"] and doc["message_model"] == "CLUSTERING"
    assert doc["dlq_count"] == 0 and detail(redis, cluster, settled.failing.group)["dlq_count"] == len(settled.doomed)
    meta = snapshots.read_meta(redis, cluster.pk)
    assert {b.name for b in meta.brokers} == {"broker-a", "broker-b"}
    assert {b.version for b in meta.brokers} == {"V5_3_3"}


def test_lag_seconds_is_poll_time_minus_the_store_time_of_the_first_unconsumed_message(cluster, redis, settled):
    poll_cluster(cluster)
    meta = snapshots.read_meta(redis, cluster.pk)
    # the healthy consumer saw every message with its store time: an independent record
    store_times = {
        (e["broker"], e["queueId"], e["queueOffset"]): e["storeTime"] for e in settled.healthy.events("acked")
    }
    doc = detail(redis, cluster, settled.lagging.group)
    lagging = [q for q in doc["queues"] if not q["retry"] and q["lag"] > 0]
    assert lagging
    for q in lagging:
        expected = (int(meta.polled_at * 1000) - store_times[(q["broker"], q["queue_id"], q["consumer"])]) / 1000
        assert q["lag_seconds"] == pytest.approx(expected, abs=0.002), q
    assert doc["lag_seconds"] == max(q["lag_seconds"] for q in lagging)
    # cached by queue and offset: the next poll reads no message again, yet keeps counting
    cache = snapshots.key(cluster.pk, "lagtime")
    cached = redis.hlen(cache)
    time.sleep(1.1)
    poll_cluster(cluster)
    assert redis.hlen(cache) == cached
    assert detail(redis, cluster, settled.lagging.group)["lag_seconds"] > doc["lag_seconds"] + 1


def test_a_stopped_group_is_stopped_and_a_stalled_one_becomes_stalled_within_the_window(cluster, redis, settled):
    held = next(e for e in settled.stalled.deliveries if e["result"] == "held")
    poll_cluster(cluster)
    stopped = detail(redis, cluster, settled.lagging.group)["health"]
    assert stopped["state"] == "STOPPED"
    assert stopped["findings"][0]["evidence"] == f"no client is online and lag is {len(settled.produced.sent) - 20}"
    for _ in range(3):
        time.sleep(1.6)
        poll_cluster(cluster)
    health = detail(redis, cluster, settled.stalled.group)["health"]
    assert health["state"] == "STALLED", health
    queue = f"{settled.topic}@{held['broker']}#{held['queueId']}"
    assert f"{queue} has stayed at offset {held['queueOffset']}" in health["findings"][0]["evidence"]
    assert detail(redis, cluster, settled.healthy.group)["health"]["state"] == "IDLE"


def test_a_failing_group_shows_a_retry_storm_and_a_growing_dlq(cluster, redis, traffic, names, create_topic):
    topic = create_topic(names.topic("storm"))
    group = names.group("storm")
    traffic.produce(topic, 40)
    # ten one-second retries a message: the storm lasts long enough for a poll to see it under
    # way even when the machine is busy (with three, it was over between two polls)
    traffic.consume(group, topic, mode="failing", failAll=True, maxReconsumeTimes=10)
    seen, dlq = Counter(), []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ({"RETRY_STORM", "DLQ_GROWING"} <= set(seen)):
        poll_cluster(cluster)
        doc = detail(redis, cluster, group)
        if doc:
            dlq.append(doc["dlq_count"])
            for finding in doc["health"]["findings"]:
                seen[finding["state"]] += 1
                if finding["state"] == "DLQ_GROWING":
                    grown = int(finding["evidence"].split()[0])
                    assert 0 < grown <= max(d for d in dlq if d is not None)
        time.sleep(1)
    assert {"RETRY_STORM", "DLQ_GROWING"} <= set(seen), (seen, dlq)


def test_duplicate_client_ids_are_diagnosed_with_the_queues_they_leave(
    cluster, redis, rmq_runtime, namesrv, traffic, names, create_topic
):
    topic = create_topic(names.topic("dup"))
    group = names.group("dup")
    traffic.produce(topic, 16)
    second = Harness(rmq_runtime, namesrv, SESSION_DIR / f"harness-{group}", name="harness-dup")
    try:
        first_run = traffic.consume(group, topic, instanceName="dup")
        second_run = second.consume(group, topic, instanceName="dup")
        assert first_run.client_id == second_run.wait_started() == "127.0.0.1@dup"

        def diagnosed() -> bool:
            # right after start the clients have not rebalanced yet: wait for the settled split
            poll_cluster(cluster)
            doc = detail(redis, cluster, group)
            messages = {d["kind"]: d["message"] for d in (doc or {}).get("diagnostics", [])}
            return "duplicate-client-id" in messages and messages.get("unheld-queues", "").startswith("4 of 8")

        wait(diagnosed, 60, "duplicate client id diagnosed")
        doc = detail(redis, cluster, group)
        duplicate = next(d for d in doc["diagnostics"] if d["kind"] == "duplicate-client-id")
        assert "127.0.0.1@dup is used by 2 connections" in duplicate["message"]
        unheld = [q for q in doc["queues"] if not q["retry"] and not q["clients"]]
        assert len(unheld) == 4  # both compute the same half of the 8 queues
    finally:
        second.close()


def test_more_consumers_than_queues_and_a_broadcasting_group(cluster, redis, traffic, names, create_topic):
    small = create_topic(names.topic("small"), queues=1)
    crowded = names.group("crowded")
    traffic.produce(small, 6)
    for i in range(3):
        traffic.consume(crowded, small, instanceName=f"{crowded}-{i}")
    wide = create_topic(names.topic("wide"), queues=2)
    produced = traffic.produce(wide, 12)
    everyone = names.group("everyone")
    listeners = [
        traffic.consume(everyone, wide, model="BROADCASTING", instanceName=f"{everyone}-{i}") for i in range(2)
    ]
    for listener in listeners:
        listener.wait_acked(12)

    def diagnosed() -> bool:
        poll_cluster(cluster)
        crowd, cast = detail(redis, cluster, crowded), detail(redis, cluster, everyone)
        return (
            crowd
            and cast
            and "clients-without-queues" in {d["kind"] for d in crowd["diagnostics"]}
            and cast["broadcast"]
            and len(cast["broadcast"]) == 2
        )

    wait(diagnosed, 60, "crowded and broadcasting groups diagnosed")
    crowd = detail(redis, cluster, crowded)
    idle = next(d for d in crowd["diagnostics"] if d["kind"] == "clients-without-queues")
    assert idle["message"].startswith("1 client(s) hold no queue") and "3 clients for 2 queues" in idle["message"]
    cast = detail(redis, cluster, everyone)
    assert cast["message_model"] == "BROADCASTING" and "broadcasting" in {d["kind"] for d in cast["diagnostics"]}
    sent = Counter(f"{wide}@{m.broker}#{m.queue_id}" for m in produced.sent)
    for client, rows in cast["broadcast"].items():
        assert {r["queue"]: r["commit_offset"] for r in rows} == dict(sent), client
        assert {r["lag"] for r in rows} == {0}
    # the queue rows show the slowest client; the group is as far behind as that client
    rows = {f"{q['topic']}@{q['broker']}#{q['queue_id']}": q for q in cast["queues"]}
    assert {label: q["consumer"] for label, q in rows.items()} == dict(sent)
    assert cast["lag"] == 0 and cast["topics"] == [wide]
    # the broker keeps no consume stats for broadcasting groups: the rate is the clients' own
    # (their sum), or unknown, never the broker's 0.0
    assert cast["consume_tps_note"].startswith("broadcasting")


def test_history_files_hold_what_the_polls_stored(cluster, redis, settled):
    for _ in range(2):
        poll_cluster(cluster)
    docs = {c.group: detail(redis, cluster, c.group) for c in settled.all}
    store = history_store()
    for table in ("queue_offsets", "group_stats"):  # a file per poll (and date)
        assert len({path.rsplit("/", 1)[-1] for path in store.files(table, "local")}) == 2
    queues, groups = store.read("queue_offsets", "local"), store.read("group_stats", "local")
    assert queues.schema.equals(QUEUE_OFFSETS) and groups.schema.equals(GROUP_STATS)
    lagging = docs[settled.lagging.group]
    # each group carries the time it was read; compare the lagging group's last poll
    last_ts = max(r["ts"] for r in groups.to_pylist() if r["group"] == settled.lagging.group)
    rows = [r for r in groups.to_pylist() if r["group"] == settled.lagging.group and r["ts"] == last_ts]
    assert [(r["lag"], r["online"], r["health"]) for r in rows] == [(lagging["lag"], False, lagging["health"]["state"])]
    queue_rows = [r for r in queues.to_pylist() if r["group"] == settled.lagging.group and r["ts"] == last_ts]
    assert sorted(
        (r["broker"], r["queue_id"], r["consumer_offset"], r["lag"]) for r in queue_rows if not r["retry"]
    ) == sorted((q["broker"], q["queue_id"], q["consumer"], q["lag"]) for q in lagging["queues"] if not q["retry"])


@pytest.mark.parametrize("extended", [True, False])
def test_a_cluster_never_polled_gets_the_deadline_of_the_groups_it_lists(
    cluster, settled, settings, monkeypatch, extended
):
    """No poll says how many groups it has, so the poll starts with ROCKETMQ_POLL_DEADLINE; once
    listed, its groups give it their deadline (a fresh 50,000-group cluster's first poll was cut
    at 12 s). Without that extension (the second case) the same poll fails: the test can fail."""
    settings.ROCKETMQ_POLL_DEADLINE = 2
    settings.ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = 60_000  # any group listed: a minute or more
    real = poll.list_cluster

    async def slow_listing(*args, **kwargs):
        found = await real(*args, **kwargs)
        await asyncio.sleep(2.5)  # past the fixed deadline when the groups' reads begin
        return found

    monkeypatch.setattr(poll, "list_cluster", slow_listing)
    if not extended:
        monkeypatch.setattr(poll, "extend_deadline", lambda at: None)
    result = poll_cluster(cluster)
    if extended:
        assert result.status in ("ok", "degraded") and result.groups > 0, result
    else:
        assert result.status == "failed" and "DeadlineExceeded" in result.error, result
