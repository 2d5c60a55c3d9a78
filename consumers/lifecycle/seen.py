"""When each group last had a client online, per cluster: every poll writes the time for the
groups online in it (a Redis hash, one field per group), and when the console began watching the
cluster. A group never seen online is judged from that start: "not seen since we began"."""

from __future__ import annotations

from ..jobs.redis_client import get_redis
from ..live import snapshots


def on_poll(*, cluster, documents, polled_at: float, **_) -> None:
    if documents is None:  # the poll read nothing: it saw nobody, which says nothing
        return
    online = {group: polled_at for group, doc in documents.items() if doc.online}
    pipe = get_redis().pipeline()
    if online:
        pipe.hset(snapshots.key(cluster.pk, "last-online"), mapping=online)
    pipe.set(snapshots.key(cluster.pk, "watching-since"), polled_at, nx=True)
    pipe.execute()


def last_online(redis, cluster_id: int) -> tuple[dict[str, float], float | None]:
    """(group -> when last seen online, when the console began watching: None if never polled)."""
    seen = redis.hgetall(snapshots.key(cluster_id, "last-online"))
    since = redis.get(snapshots.key(cluster_id, "watching-since"))
    decoded = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in seen.items()}
    return decoded, float(since) if since is not None else None
