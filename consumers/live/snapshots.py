"""The latest state of every cluster, in Redis.

Per cluster (by id):
    rmqc:<id>:meta      JSON: when the last poll ran, how it went, brokers, problems
    rmqc:<id>:index     JSON list, by group: what the groups list sorts and filters on
    rmqc:<id>:summaries hash: group -> JSON summary (the rows a page shows, /metrics)
    rmqc:<id>:detail    hash: group -> JSON detail document (the group page)
    rmqc:<id>:window    list, newest first: {"t": poll time, "s": {group: health sample}}
    rmqc:<id>:lagtime   hash: message store times (see lagtime.py)
    rmqc:<id>:due       set while the cluster's poll interval runs (see dispatch.py)
    rmqc:<id>:lock      held while a poll runs

A successful poll replaces meta, index, summaries, detail and pushes one window entry in a single
transaction, so a reader never sees half a poll. A failed poll only updates meta: the last
known data stays, and pages show its age and the failure.
"""

from __future__ import annotations

import json

from .documents import ClusterMeta, GroupDocument
from .health import Sample

WINDOW_ENTRIES = 120  # covers windows up to 30 min at the default 15 s interval


def key(cluster_id: int, name: str) -> str:
    return f"rmqc:{cluster_id}:{name}"


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def write_poll(
    redis,
    cluster_id: int,
    *,
    meta: ClusterMeta,
    documents: dict[str, GroupDocument],
    samples: dict[str, Sample],
    polled_at: float,
) -> None:
    summaries = {g: d.summary() for g, d in documents.items()}
    pipe = redis.pipeline(transaction=True)
    pipe.set(key(cluster_id, "meta"), _dumps(meta.to_wire()))
    pipe.set(key(cluster_id, "index"), _dumps([index_entry(summaries[g]) for g in sorted(summaries)]))
    pipe.delete(key(cluster_id, "summaries"), key(cluster_id, "detail"), key(cluster_id, LEGACY_SUMMARIES))
    if documents:
        pipe.hset(key(cluster_id, "summaries"), mapping={g: _dumps(s) for g, s in summaries.items()})
        pipe.hset(key(cluster_id, "detail"), mapping={g: _dumps(d.to_wire()) for g, d in documents.items()})
    pipe.lpush(key(cluster_id, "window"), _dumps({"t": polled_at, "s": {g: s.to_wire() for g, s in samples.items()}}))
    pipe.ltrim(key(cluster_id, "window"), 0, WINDOW_ENTRIES - 1)
    pipe.execute()


def write_meta(redis, cluster_id: int, meta: ClusterMeta) -> None:
    redis.set(key(cluster_id, "meta"), _dumps(meta.to_wire()))


def read_meta(redis, cluster_id: int) -> ClusterMeta | None:
    raw = redis.get(key(cluster_id, "meta"))
    return ClusterMeta.from_wire(json.loads(raw)) if raw else None


def read_metas(redis, cluster_ids: list[int]) -> dict[int, ClusterMeta | None]:
    if not cluster_ids:
        return {}
    raws = redis.mget([key(c, "meta") for c in cluster_ids])
    return {c: ClusterMeta.from_wire(json.loads(r)) if r else None for c, r in zip(cluster_ids, raws, strict=True)}


# What the groups list sorts and filters on (SORT_KEYS and the filters in selectors.py), and
# the health state without its findings: a tenth of a summary. A list of 10,000 groups decodes
# these and reads whole summaries only for the rows it shows (a 6 MB decode after each poll
# was most of the first request's time).
INDEX_FIELDS = (
    "group",
    "as_of",
    "stale_reason",
    "lag",
    "lag_seconds",
    "consume_tps",
    "retry_lag",
    "dlq_count",
    "topics",
    "online",
)


def index_entry(summary: dict) -> dict:
    entry = {name: summary.get(name) for name in INDEX_FIELDS}
    entry["health"] = {"state": (summary.get("health") or {}).get("state", "UNKNOWN")}
    drain = summary.get("drain") or {}
    entry["drain"] = {"state": drain.get("state", "UNKNOWN"), "seconds": drain.get("seconds")}
    return entry


# the last index decoded per cluster, with the bytes it came from: a poll replaces it every 15 s
# or so, while the groups list (refreshed every 5 s by each viewer), the overview and /metrics
# read it far more often; comparing the bytes read with the bytes decoded costs little.
_decoded: dict[int, tuple[bytes, list[dict]]] = {}


# Before the index, a poll wrote every summary in one JSON list under this key: read it until
# the cluster's first poll since (its summaries are whole entries), which removes it.
LEGACY_SUMMARIES = "groups"


def read_index(redis, cluster_ids: list[int]) -> dict[int, list[dict]]:
    """Each cluster's index entries (shared between callers: read them, never change them)."""
    if not cluster_ids:
        return {}
    raws = redis.mget([key(c, "index") for c in cluster_ids])
    unindexed = [c for c, raw in zip(cluster_ids, raws, strict=True) if not raw]
    if unindexed:
        legacy = dict(zip(unindexed, redis.mget([key(c, LEGACY_SUMMARIES) for c in unindexed]), strict=True))
        raws = [raw or legacy[c] for c, raw in zip(cluster_ids, raws, strict=True)]
    found = {}
    for cluster_id, raw in zip(cluster_ids, raws, strict=True):
        cached = _decoded.get(cluster_id)
        if not raw:
            found[cluster_id] = []
            _decoded.pop(cluster_id, None)
        elif cached is not None and cached[0] == raw:
            found[cluster_id] = cached[1]
        else:
            found[cluster_id] = json.loads(raw)
            _decoded[cluster_id] = (raw, found[cluster_id])
    return found


def read_summaries(redis, cluster_id: int, groups: list[str] | None = None) -> dict[str, dict]:
    """The whole summaries of `groups` (None: all) that the last poll wrote."""
    name = key(cluster_id, "summaries")
    if groups is None:
        return {g.decode(): json.loads(s) for g, s in redis.hgetall(name).items()}
    if not groups:
        return {}
    return {g: json.loads(s) for g, s in zip(groups, redis.hmget(name, groups), strict=True) if s}


def read_detail(redis, cluster_id: int, group: str) -> GroupDocument | None:
    raw = redis.hget(key(cluster_id, "detail"), group)
    return GroupDocument.from_wire(json.loads(raw)) if raw else None


def read_details(redis, cluster_id: int) -> dict[str, GroupDocument]:
    return {
        g.decode(): GroupDocument.from_wire(json.loads(d)) for g, d in redis.hgetall(key(cluster_id, "detail")).items()
    }


class LazyDetails:
    """The previous documents, read one group at a time when a poll needs one (a group it
    could not read, or one with no topics of its own): a poll that read every broker needs
    almost none, and decoding all of them was about a tenth of a 10,000-group poll."""

    def __init__(self, redis, cluster_id: int):
        self.redis, self.key, self.cache = redis, key(cluster_id, "detail"), {}

    def loader(self, group: str):
        """A function that reads the group's previous document (build_document calls it only
        if it needs it)."""
        return lambda: self.get(group)

    def get(self, group: str) -> GroupDocument | None:
        if group not in self.cache:
            raw = self.redis.hget(self.key, group)
            self.cache[group] = GroupDocument.from_wire(json.loads(raw)) if raw else None
        return self.cache[group]


def read_window(redis, cluster_id: int, *, since: float) -> dict[str, list[Sample]]:
    """Each group's samples newer than `since`, oldest first."""
    inside = []
    for raw in redis.lrange(key(cluster_id, "window"), 0, WINDOW_ENTRIES - 1):  # newest first
        if _entry_time(raw) < since:
            break  # and so is every older one: not decoded (an entry holds every group's sample)
        inside.append(raw)
    samples: dict[str, list[Sample]] = {}
    for raw in reversed(inside):
        for group, wire in json.loads(raw)["s"].items():
            samples.setdefault(group, []).append(Sample.from_wire(wire))
    return samples


def _entry_time(raw: bytes | str) -> float:
    """An entry's poll time without decoding its samples: write_poll puts "t" first."""
    head = raw[:40].decode() if isinstance(raw, bytes) else raw[:40]
    if head.startswith('{"t":'):
        try:
            return float(head[5 : head.index(",")])
        except ValueError:
            pass
    return json.loads(raw)["t"]


def last_online(redis, cluster_id: int) -> tuple[dict[str, float], float | None]:
    """(group -> when a poll last saw a client of it online, when the console began watching the
    cluster: None if never polled). Written by consumers/lifecycle/seen.py at every poll."""
    seen = redis.hgetall(key(cluster_id, "last-online"))
    since = redis.get(key(cluster_id, "watching-since"))
    decoded = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in seen.items()}
    return decoded, float(since) if since is not None else None
