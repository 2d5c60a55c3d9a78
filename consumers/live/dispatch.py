"""Which clusters are due for a poll.

Celery beat runs the dispatcher twice a second. Each cluster's `due` key holds the time its
next poll is due; claiming a due cluster moves that time on by exactly one poll interval from
the previous due time (not from now), so the period does not drift by the beat's tick, and a
Lua script makes the claim atomic: several dispatchers at once still enqueue a poll once.
"""

from __future__ import annotations

import time

from ..models import Cluster
from .snapshots import key

_CLAIM = """
local due = tonumber(redis.call('get', KEYS[1]))
local now, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
if due and now < due then return 0 end
local following = due and (due + interval) or (now + interval)
if following <= now then following = now + interval end  -- fell behind: no burst of catch-up polls
redis.call('set', KEYS[1], tostring(following), 'EX', math.ceil(interval * 4))
return 1
"""


def claim_due_clusters(redis, *, now: float | None = None) -> list[int]:
    now = time.time() if now is None else now
    due = []
    for cluster_id, interval in Cluster.objects.filter(enabled=True).values_list("pk", "poll_interval"):
        if redis.eval(_CLAIM, 1, key(cluster_id, "due"), repr(now), interval):
            due.append(cluster_id)
    return due
