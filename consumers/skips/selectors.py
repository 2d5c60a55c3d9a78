"""Reads from what the console keeps (no broker): which finished skips passed over a message."""

from __future__ import annotations

from ..changes.models import ChangeRequest, State
from ..models import Cluster


def covering(
    cluster: Cluster, topic: str, broker: str, queue_id: int, offset: int
) -> dict[str, tuple[int, str | None]]:
    """Per group, the done skip whose range holds the message at this queue offset: its change
    id, and the client id its copy in the group's DLQ was sent with (None: no copy was kept).
    The newest skip wins when two covered it (the first was then undone or replayed)."""
    found: dict[str, tuple[int, str | None]] = {}
    done = ChangeRequest.objects.filter(cluster=cluster, kind=ChangeRequest.Kind.SKIP, state=State.DONE).order_by("pk")
    for request in done.only("pk", "group", "params", "result"):
        skip = (request.params or {}).get("skip") or {}
        if (skip.get("topic"), skip.get("broker"), skip.get("queue_id")) != (topic, broker, queue_id):
            continue
        start = skip.get("offset")
        if not isinstance(start, int) or not start <= offset < start + int(skip.get("count") or 1):
            continue
        copied = (request.result or {}).get("copied") or {}
        found[request.group] = (request.pk, copied.get(str(offset)) if skip.get("copy_to_dlq") else None)
    return found
