"""The latest state of every cluster, in Redis.

Per cluster (by id):
    rmqc:<id>:meta      JSON: when the last poll ran, how it went, brokers, problems
    rmqc:<id>:groups    JSON list: one summary per group (the groups page)
    rmqc:<id>:detail    hash: group -> JSON detail document (the group page)
    rmqc:<id>:window    list, newest first: {"t": poll time, "s": {group: health sample}}
    rmqc:<id>:lagtime   hash: message store times (see lagtime.py)
    rmqc:<id>:due       set while the cluster's poll interval runs (see dispatch.py)
    rmqc:<id>:lock      held while a poll runs

A successful poll replaces meta, groups, detail and pushes one window entry in a single
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
    summaries = sorted((d.summary() for d in documents.values()), key=lambda s: s["group"])
    pipe = redis.pipeline(transaction=True)
    pipe.set(key(cluster_id, "meta"), _dumps(meta.to_wire()))
    pipe.set(key(cluster_id, "groups"), _dumps(summaries))
    pipe.delete(key(cluster_id, "detail"))
    if documents:
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


# the last summaries decoded per cluster, with the bytes they came from: a poll replaces them
# every 15 s or so, while the groups list (refreshed every 5 s by each viewer), the overview and
# /metrics read them far more often. Decoding 10,000 summaries was a third of the list's time;
# comparing the bytes read with the bytes decoded costs about a millisecond.
_decoded: dict[int, tuple[bytes, list[dict]]] = {}


def read_summaries(redis, cluster_ids: list[int]) -> dict[int, list[dict]]:
    """Each cluster's group summaries (shared between callers: read them, never change them)."""
    if not cluster_ids:
        return {}
    raws = redis.mget([key(c, "groups") for c in cluster_ids])
    found = {}
    for cluster_id, raw in zip(cluster_ids, raws, strict=True):
        cached = _decoded.get(cluster_id)
        if not raw:
            found[cluster_id] = []
        elif cached is not None and cached[0] == raw:
            found[cluster_id] = cached[1]
        else:
            found[cluster_id] = json.loads(raw)
            _decoded[cluster_id] = (raw, found[cluster_id])
    return found


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
