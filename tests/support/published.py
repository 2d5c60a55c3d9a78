"""Publish a synthetic snapshot to Redis exactly as a poll would, for view tests."""

from __future__ import annotations

import time

from consumers import documents, snapshots
from consumers.health import Thresholds, evaluate
from consumers.lagtime import LagTime
from consumers.models import Cluster
from consumers.rocketmq import GroupProgress, QueueProgress
from consumers.rocketmq.models import ClientConnection, ConsumerConnection


def group(
    name: str, *, lag: int = 0, queues: int = 4, online: bool = True, topic: str = "T", problems=()
) -> GroupProgress:
    """A group on broker-a whose `lag` is spread over its queues."""
    progress = GroupProgress(group=name, fetched_at=time.time(), online=online)
    per_queue = [lag // queues + (1 if i < lag % queues else 0) for i in range(queues)]
    now_ms = int(time.time() * 1000)
    progress.queues = [
        QueueProgress(topic, "broker-a", i, 100, 100 - per_queue[i], 0, 100, now_ms, ("c1",) if online else ())
        for i in range(queues)
    ]
    if online:
        progress.connection = ConsumerConnection(
            [ClientConnection("c1", "127.0.0.1:5", "JAVA", 479)], {}, "CONSUME_PASSIVELY", "CLUSTERING", None
        )
    progress.problems = list(problems)
    return progress


def publish(
    cluster: Cluster,
    redis,
    groups: list[GroupProgress],
    *,
    dlq: dict | None = None,
    lag_seconds: dict | None = None,
    meta: dict | None = None,
) -> dict[str, dict]:
    """Write these groups as the cluster's latest poll; lag_seconds[group] None means not measured."""
    polled_at = time.time()
    docs = {}
    for progress in groups:
        seconds = (lag_seconds or {}).get(progress.group, 1.0)
        lag_times = {(progress.group, q.queue): LagTime(seconds if q.lag else 0.0) for q in progress.queues}
        doc = documents.build_document(
            progress, lag_times=lag_times, dlq_count=(dlq or {}).get(progress.group, 0), previous=None
        )
        documents.set_health(doc, evaluate([documents.sample(doc, polled_at)], Thresholds()))
        docs[progress.group] = doc
    samples = {g: documents.sample(d, polled_at) for g, d in docs.items()}
    broker = {
        "name": "broker-a",
        "address": "127.0.0.1:10911",
        "cluster": "DefaultCluster",
        "version": "V5_3_3",
        "put_tps": 1.5,
        "get_tps": 2.5,
        "boot_ms": 1,
        "error": None,
    }
    meta = {
        "cluster_id": cluster.pk,
        "name": cluster.name,
        "polled_at": polled_at,
        "duration": 0.1,
        "status": "ok",
        "error": None,
        "last_success_at": polled_at,
        "groups": len(docs),
        "groups_incomplete": 0,
        "brokers": [broker],
        "problems": [],
        **(meta or {}),
    }
    summaries = sorted((documents.summary(d) for d in docs.values()), key=lambda s: s["group"])
    snapshots.write_poll(
        redis, cluster.pk, meta=meta, documents=docs, summaries=summaries, samples=samples, polled_at=polled_at
    )
    return docs
