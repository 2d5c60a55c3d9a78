"""Reads from what the console keeps (no broker): the last poll's view of the groups of a topic."""

from __future__ import annotations

from ..live import snapshots
from ..live.documents import GroupDocument
from ..models import Cluster
from .verdicts import Hint


def hints(redis, cluster: Cluster, topic: str, broker: str, queue_id: int) -> dict[str, Hint]:
    """Each group the last poll saw consuming `topic`: how it consumes (POP, gRPC, broadcast),
    its messages in flight, and its committed offset on the given queue at that poll. Groups
    the broker made from POP retry-topic names are left out (no consumer is behind them)."""
    entries = snapshots.read_index(redis, [cluster.pk])[cluster.pk]
    groups = [e["group"] for e in entries if topic in (e.get("topics") or [])]
    if not groups:
        return {}
    found = {}
    for group, raw in zip(groups, redis.hmget(snapshots.key(cluster.pk, "detail"), groups), strict=True):
        if not raw:
            continue
        doc = GroupDocument.decode(raw)
        if doc.made_from_retry_topic:
            continue
        row = next((q for q in doc.queues if (q.topic, q.broker, q.queue_id) == (topic, broker, queue_id)), None)
        found[group] = Hint(
            consumption=doc.consumption,
            message_model=doc.message_model,
            in_flight=doc.in_flight,
            polled_at=row.as_of if row and row.as_of else doc.as_of,
            polled_offset=row.consumer if row and not row.stale_reason else None,
        )
    return found


def topic_visible(cluster: Cluster, topic: str, scope) -> bool:
    """Whether `scope` may see the messages of `topic`: a topic its grants name, or a retry or
    dead-letter topic of its groups. Not a topic one of its groups consumes: anyone with access
    to the brokers can commit offsets under a name that matches a team's group pattern (a
    `payments-spy` on `orders`), and the brokers would then widen the team's grant to that
    topic. What a team may read is what an admin wrote in its grant."""
    return scope.sees_topic(cluster.name, topic)
