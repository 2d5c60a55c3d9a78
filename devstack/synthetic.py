"""Synthetic poll readings for view tests and page benchmarks: groups on one broker, published
through the production `publish_poll`, exactly as a poll would publish them."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from consumers.live import snapshots
from consumers.live.brokers import BrokerReport
from consumers.live.config import default_thresholds
from consumers.live.documents import BrokerState, GroupDocument, ProxyState
from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.live.lagtime import LagTime
from consumers.live.publish import PollReading, publish_poll
from consumers.models import Cluster
from consumers.rocketmq import ClusterSnapshot, GroupProgress, QueueProgress
from consumers.rocketmq.models import ClientConnection, ClusterInfo, ConsumerConnection

BROKER = BrokerState(
    "broker-a", "127.0.0.1:10911", cluster="DefaultCluster", version="V5_3_3", put_tps=1.5, get_tps=2.5, boot_ms=1
)


def group(
    name: str, *, lag: int = 0, queues: int = 4, online: bool = True, topic: str = "T", problems=(), top: int = 100
) -> GroupProgress:
    """A group on broker-a whose `lag` is spread over its queues, each with max offset `top`."""
    progress = GroupProgress(group=name, fetched_at=time.time(), online=online)
    per_queue = [lag // queues + (1 if i < lag % queues else 0) for i in range(queues)]
    now_ms = int(time.time() * 1000)
    progress.queues = [
        QueueProgress(topic, "broker-a", i, top, top - per_queue[i], 0, top, now_ms, ("c1",) if online else ())
        for i in range(queues)
    ]
    progress.brokers = {"broker-a": BROKER.address}
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
    history: HistoryStore | None = None,
    proxies: list[ProxyState] | None = None,
) -> dict[str, GroupDocument]:
    """Publish these groups as the cluster's latest poll; lag_seconds[group] None means not
    measured (default 1 s for every lagging queue). Returns the published documents."""
    polled_at = time.time()
    lag_times = {
        (p.group, q.queue): LagTime((lag_seconds or {}).get(p.group, 1.0) if q.lag else 0.0)
        for p in groups
        for q in p.queues
    }
    snapshot = ClusterSnapshot(
        fetched_at=polled_at,
        duration=0.1,
        cluster_info=ClusterInfo(brokers={}, clusters={"DefaultCluster": ["broker-a"]}),
        brokers={},
        groups={p.group: p for p in groups},
    )
    reading = PollReading(
        snapshot=snapshot,
        polled_at=polled_at,
        lag_times=lag_times,
        dlq_counts={p.group: (dlq or {}).get(p.group, 0) for p in groups},
        proxies=proxies,
    )
    store = history or HistoryStore(Path(tempfile.mkdtemp(prefix="synthetic-history-")), state=MemoryOffsets())
    publish_poll(
        cluster,
        reading,
        brokers=BrokerReport([BrokerState(**{**BROKER.__dict__, "last_seen_at": polled_at})]),
        redis=redis,
        history=store,
        thresholds=default_thresholds(),
        overrides={},
        started=time.monotonic(),
    )
    return snapshots.read_details(redis, cluster.pk)
