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


last_online = snapshots.last_online  # the reader lives with the other snapshot keys
