"""Which clusters are due for a poll.

Celery beat runs the dispatcher every couple of seconds; a cluster is due when its `due`
key has expired. The key lives for the cluster's poll interval, so each cluster is polled
once per its own interval however often beat ticks, and several workers dispatching at once
still enqueue a poll only once (SET NX).
"""

from __future__ import annotations

from ..models import Cluster
from ..snapshots import key


def claim_due_clusters(redis) -> list[int]:
    due = []
    for cluster_id, interval in Cluster.objects.filter(enabled=True).values_list("pk", "poll_interval"):
        if redis.set(key(cluster_id, "due"), 1, nx=True, ex=interval):
            due.append(cluster_id)
    return due
