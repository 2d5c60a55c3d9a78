"""A big cluster's poll split in parts (consumers/live/parts.py), on the real cluster: the parts
read what one process reads (mqadmin the oracle), each part once; a part whose worker is killed
mid-part leaves exactly its groups stale, and the next poll is whole.

Real parts: the session's RocketMQ cluster and its settled groups, Redis, and for the kill two
`celery worker --pool prefork` processes and beat with the console's Celery app."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import redis as redis_py

from consumers.live import parts, snapshots, staging, window
from consumers.live.config import history_store
from consumers.live.documents import GroupDocument, QueueRow
from consumers.live.history_rows import history_tables
from consumers.live.poll import poll_cluster
from consumers.live.retention import BrokerRetention
from consumers.models import Cluster
from consumers.rocketmq.models import MessageQueue
from consumers.rocketmq.proxies import ProxyStatus
from devstack.mqadmin import parse_consumer_progress
from devstack.redis import LocalRedis
from tests.support.workers import console_environment, create_cluster, start_workers_and_beat


def test_names_are_cut_into_contiguous_parts_of_even_size():
    names = [f"g{i:03d}" for i in range(10)]
    assert parts.split(names, 4) == [names[0:4], names[4:7], names[7:10]]
    assert parts.split(names, 10) == [names] and parts.split(names, 100) == [names]
    assert parts.split([], 5) == [[]]
    cut = parts.split([f"g{i:05d}" for i in range(50_000)], 12_500)
    assert [len(p) for p in cut] == [12_500] * 4 and sum(cut, []) == sorted(sum(cut, []))


def test_a_part_result_comes_back_from_redis_as_it_was_sent(redis):
    """Its documents in their light form (summary and problems: the whole ones are staged), its
    history rows as Arrow tables beside the JSON."""
    doc = GroupDocument(group="g", as_of=1.5, lag=7, queues=[QueueRow(**_row())], problems=[{"scope": "x"}])
    light = staging.light(doc)
    kept = GroupDocument.from_wire(light)  # as the poll keeps it
    assert kept.summary() == doc.summary() and kept.problems == doc.problems and kept.queues == []
    mq = MessageQueue("T", "broker-a", 3)
    sent = parts.PartResult(
        documents={"g": light},
        safe_from={mq: 42, MessageQueue("T", "broker-a", 4): "not read: timeout"},
        retention={"broker-a": BrokerRetention(reserved_hours=72.0, delete_hours=(4,), current_file_start=0)},
        proxies={"127.0.0.1:8081": ProxyStatus("127.0.0.1:8081", groups=2, group_names=["g", "h"])},
        proxy_groups=["g"],
        seconds=1.25,
    )
    assert parts.PartResult.from_wire(sent.to_wire()) == sent
    sent.history = history_tables([doc])
    board = parts.Board(redis, 7, "p1")
    board.finish(2, sent)
    back = board.result(2)
    assert back == sent and back.history["queue_offsets"].num_rows == 1
    assert back.history["queue_offsets"].to_pylist() == sent.history["queue_offsets"].to_pylist()
    # taken as it is read: the result and its tables leave Redis then, not at the poll's end
    # (at 50,000 groups they were about 55 MB beside the staged documents); the list of parts done
    # stays until the poll clears the board
    assert {k.decode() for k in redis.keys(snapshots.key(7, "part:*"))} == {board.key("done")}
    assert board.result(2) is None and not board.started(2)
    board.finish(1, sent)  # a part the poll's own process ran: it holds the result already
    board.taken(1)
    assert board.result(1) is None
    board.clear(3)
    assert not redis.keys(snapshots.key(7, "part:*"))


def _ms(ts) -> int:
    return round(ts.timestamp() * 1000)


def _row() -> dict:
    from dataclasses import fields

    values = {f.name: None for f in fields(QueueRow)}
    values.update(topic="T", broker="broker-a", queue_id=3, retry=False, lag=7, consumer=3, max=10, clients=["c1"])
    return values


@pytest.mark.broker
def test_a_split_poll_reads_what_one_process_reads(db, redis, history_dir, namesrv, settled, mqadmin, settings):
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    whole = poll_cluster(cluster)
    assert whole.status in ("ok", "degraded") and whole.groups >= 4
    settings.ROCKETMQ_POLL_PART_GROUPS = max(1, whole.groups // 3)  # three parts or four
    sent, workers = [], []

    def send(cluster_id, poll_id, index, deadline_at):  # a worker of its own per part, as Celery would give
        sent.append(index)
        worker = threading.Thread(target=parts.run_posted, args=(cluster, redis, poll_id, index))
        workers.append(worker)
        worker.start()

    split = poll_cluster(cluster, send=send)
    for worker in workers:
        worker.join(30)
    assert split.status in ("ok", "degraded") and "parts read" in split.stages, split.stages
    assert {"parts: brokers read", "parts: documents", "parts: health"} <= set(split.stages), split.stages
    assert sent and sent == list(range(1, len(sent) + 1)) and len(sent) >= 2  # every part but the first
    assert split.groups >= whole.groups - 2  # other tests' groups come and go meanwhile
    for consumer in settled.all:
        doc = snapshots.read_detail(redis, cluster.pk, consumer.group)
        theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", consumer.group).out)
        assert not doc.stale and {(q.topic, q.broker, q.queue_id): q.lag for q in doc.queues} == {
            (r.topic, r.broker, r.queue_id): r.diff for r in theirs.rows
        }
    assert not any("of the poll was not read" in (d.stale_reason or "") for d in snapshots.read_details(
        redis, cluster.pk).values())  # fmt: skip
    # the parts staged their documents, and the poll made the staging hash its detail hash: kept
    # with no expiry, nothing left staged; the history holds every group's rows of the split poll
    assert redis.ttl(snapshots.key(cluster.pk, "detail")) == -1
    left = redis.keys(snapshots.key(cluster.pk, "detail-next:*"))  # only the closed flag, expiring
    assert len(left) == 1 and left[0].endswith(b":closed") and redis.ttl(left[0]) > 0
    assert not redis.keys(snapshots.key(cluster.pk, "part:*"))
    read = {(g, int(d.as_of * 1000)) for g, d in snapshots.read_details(redis, cluster.pk).items() if not d.stale}
    store = history_store()
    rows = [r for r in store.read("group_stats", "local").to_pylist() if (r["group"], _ms(r["ts"])) in read]
    assert sorted((r["group"], _ms(r["ts"])) for r in rows) == sorted(read)
    queue_rows = [r for r in store.read("queue_offsets", "local").to_pylist() if (r["group"], _ms(r["ts"])) in read]
    for consumer in settled.all:
        doc = snapshots.read_detail(redis, cluster.pk, consumer.group)
        mine = {(r["topic"], r["broker"], r["queue_id"]): r["lag"] for r in queue_rows if r["group"] == consumer.group}
        assert mine == {(q.topic, q.broker, q.queue_id): q.lag for q in doc.queues if q.consumer is not None}
    # each part judged its groups, on the window the whole poll began (their samples of both polls),
    # and wrote this poll's samples as a range of its own
    newest = json.loads(redis.lindex(window.key(cluster.pk, "window"), 0))
    assert len(redis.hkeys(newest["h"])) == len(sent) + 1
    for consumer in settled.all:
        health = snapshots.read_detail(redis, cluster.pk, consumer.group).health
        assert health["state"] != "UNKNOWN" and health["covered_seconds"] > 0, (consumer.group, health)
        samples = window.read(redis, cluster.pk, since=0, groups=[consumer.group])[consumer.group]
        assert len(samples) == 2 and samples[-1].t == pytest.approx(snapshots.read_meta(redis, cluster.pk).polled_at)
    # no worker takes the parts (a busy pool): the poll's own process reads them all
    alone = poll_cluster(cluster, send=lambda *part: None)
    assert alone.status in ("ok", "degraded") and alone.groups >= whole.groups - 2
    assert all(not snapshots.read_detail(redis, cluster.pk, c.group).stale for c in settled.all)


def test_a_part_task_delivered_late_or_twice_does_nothing(db, redis):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    board = parts.Board(redis, cluster.pk, "p1")
    plan = dict(poll_id="p1", count=2, groups=["g"], polled_at=time.time(), unreachable={})
    board.post([parts.Part(index=0, deadline_at=time.time() + 60, **plan),
                parts.Part(index=1, deadline_at=time.time() - 1, **plan)])  # fmt: skip
    assert parts.run_posted(cluster, redis, "p1", 1) == "expired"  # past the poll's deadline
    assert parts.run_posted(cluster, redis, "p-gone", 0) == "expired"  # the poll ended: its plan cleared
    claim = board.claim(0)
    assert claim is not None and board.claim(0) is None
    assert parts.run_posted(cluster, redis, "p1", 0) == "taken"  # a worker has it
    claim.release()
    assert parts.run_posted(cluster, redis, "p1", 0) == "taken" and board.lost(0)  # had it, and died


@pytest.mark.broker
@pytest.mark.slow
def test_a_part_whose_worker_is_killed_leaves_its_groups_stale_and_the_next_poll_is_whole(
    tmp_path: Path, namesrv, mqadmin, names
):
    for n in range(24):  # enough groups of the test's own for several parts, whatever else the cluster has
        mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", names.group(f"parts-{n}"))
    server = LocalRedis(tmp_path / "redis")
    environment = console_environment(tmp_path, server.url, ROCKETMQ_POLL_PART_GROUPS="20")
    cluster_id = create_cluster(environment, namesrv, 5)
    client = redis_py.Redis.from_url(server.url)
    workers, beat = start_workers_and_beat(tmp_path, environment, "parts")
    try:
        for worker in workers:
            worker.wait_for_log(" ready.", 120)

        def published(after: float):
            meta = snapshots.read_meta(client, cluster_id)
            return (meta, snapshots.read_details(client, cluster_id)) if meta and meta.polled_at > after else None

        # a part a worker other than the poll's own has claimed: stopped at once, then killed. A part
        # of a few groups may be read and posted before the kill lands: then its groups are read in
        # that poll (fresh, never a hole), and the next part is tried (the killed worker's pool
        # starts another process meanwhile)
        killed_mid_part, last = None, 0.0
        for _ in range(8):
            key, pid, plan = until(lambda after=last: _claimed_elsewhere(client, cluster_id, after=after), 120,
                                   "a part claimed elsewhere", 0.001)  # fmt: skip
            os.kill(pid, signal.SIGSTOP)
            os.kill(pid, signal.SIGKILL)
            last = plan.polled_at
            meta, docs = until(lambda at=plan.polled_at: published(at - 0.001), 60, "the poll with the killed part")
            assert abs(meta.polled_at - plan.polled_at) < 0.001, "a later poll was read first"
            reason = f"part {plan.index + 1} of {plan.count} of the poll was not read"
            stale = {g for g, d in docs.items() if reason in (d.stale_reason or "")}
            if not stale:  # killed after its part was in: each of its groups read in this poll
                assert all(not docs[g].stale and docs[g].as_of >= plan.polled_at - 5 for g in plan.groups)
                continue
            killed_mid_part = (meta, docs, stale, set(plan.groups), reason)
            break
        assert killed_mid_part, "every kill came after the part was posted"
        meta, docs, stale, lost, reason = killed_mid_part
        assert meta.status == "degraded" and stale == lost, (meta.status, sorted(stale ^ lost))
        # judged by the poll itself (no part did): unknown, with why
        assert all(docs[g].health["state"] == "UNKNOWN" and reason in docs[g].health["findings"][0]["evidence"]
                   for g in lost), docs[min(lost)].health  # fmt: skip
        assert "claim lapsed" in docs[min(lost)].stale_reason
        killed_at = time.time()
        # the next poll: whole
        meta, docs = until(lambda: published(killed_at + 1), 60, "a later poll")
        assert not [g for g, d in docs.items() if "of the poll was not read" in (d.stale_reason or "")]
        assert all(not docs[g].stale for g in lost)
    finally:
        beat.stop()
        for worker in workers:
            worker.stop()
        server.stop()


def _claimed_elsewhere(client, cluster_id: int, *, after: float):
    """(claim key, pid, plan) of a part of a poll later than `after` claimed by a process other
    than the poll's own."""
    lock = client.get(snapshots.key(cluster_id, "lock"))
    if lock is None:
        return None
    holder = lock.decode().split("|")[1]
    for key in client.keys(snapshots.key(cluster_id, "part:*:claim:*")):
        value = client.get(key)
        if value is None or value.decode().split("|")[1] == holder:
            continue
        poll_id, index = key.decode().split(":")[3], int(key.decode().rsplit(":", 1)[1])
        plan = parts.Board(client, cluster_id, poll_id).plan(index)
        if plan is not None and plan.polled_at > after:
            return key, int(value.decode().split("|")[1].rsplit(":", 1)[1]), plan
    return None


def until(condition, timeout: float, what: str, every: float = 0.05):
    """`condition()`'s first true value, asked every `every` s."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"not reached within {timeout}s: {what}"
        time.sleep(every)
    return found


def test_why_a_part_was_not_read_is_said_in_chinese():
    from django.utils import translation

    from consumers.languages.evidence import translate_evidence
    from consumers.live import notes

    plan = parts.Part(poll_id="p", index=1, count=4, groups=["g"], polled_at=1.0, deadline_at=2.0, unreachable={})
    said = parts._missing(plan, notes.PART_LOST).error
    assert said == "part 2 of 4 of the poll was not read: the worker reading it stopped (its claim lapsed)"
    with translation.override("zh-hans"):
        chinese = translate_evidence(said)
    assert chinese == "本次轮询的第 2 部分（共 4 部分）未读取：" + "读取它的 worker 已停止（其认领已过期）"
