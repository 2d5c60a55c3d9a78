"""The latest state of every cluster, in Redis.

Per cluster (by id):
    rmqc:<id>:meta      JSON: when the last poll ran, how it went, brokers, problems
    rmqc:<id>:index     JSON list, by group: what the groups list sorts and filters on
    rmqc:<id>:detail    hash: group -> JSON document (the group page; the rows a page shows)
    rmqc:<id>:window    list, newest first, of the polls' health samples (window.py)
    rmqc:<id>:lagtime   hash: message store times (see lagtime.py)
    rmqc:<id>:due       set while the cluster's poll interval runs (see dispatch.py)
    rmqc:<id>:lock      held while a poll runs

A successful poll replaces meta, index, detail and pushes one window entry in a single
transaction, so a reader never sees half a poll. A failed poll only updates meta: the last
known data stays, and pages show its age and the failure.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

from . import window
from .documents import ClusterMeta, GroupDocument
from .health import Sample
from .jsonwire import dumps as _dumps
from .staging import Staged, stage
from .window import key  # every key of a cluster: rmqc:<id>:<name>


def write_poll(
    redis,
    cluster_id: int,
    *,
    meta: ClusterMeta,
    documents: dict[str, GroupDocument],
    samples: dict[str, Sample],
    polled_at: float,
    window_id: str | None = None,
    keep_seconds: float | None = None,
    staged: Staged | None = None,
) -> None:
    """The poll, in one transaction. `samples`: those of the groups judged here (window.py); a
    split poll's parts wrote theirs under `window_id` already; the window keeps `keep_seconds`.
    `staged`: the groups whose documents a split poll's parts staged (`documents` has them light);
    the others are staged beside them, and the staging hash becomes the detail hash."""
    window_id = window_id or window.new_id()
    if staged is not None:
        _stage_rest(redis, cluster_id, staged, documents)
    pipe = redis.pipeline(transaction=True)
    pipe.set(key(cluster_id, "meta"), _dumps(meta.to_wire()))
    pipe.set(key(cluster_id, "index"), _index_text([index_entry(documents[g].summary()) for g in sorted(documents)]))
    pipe.set(key(cluster_id, "index-version"), uuid.uuid4().hex)
    pipe.delete(*(key(cluster_id, name) for name in LEGACY))
    if staged is not None and documents:
        # replaces the detail hash at once; were the staging hash gone, the last poll's stays
        pipe.rename(staged.key, key(cluster_id, "detail"))
        pipe.persist(key(cluster_id, "detail"))  # the staging hash's expiry is not the detail's
    else:
        pipe.delete(key(cluster_id, "detail"))
        if documents:
            pipe.hset(key(cluster_id, "detail"), mapping={g: d.encode() for g, d in documents.items()})
    window.write_range(pipe, cluster_id, window_id, samples)
    window.push(redis, pipe, cluster_id, window_id, polled_at, keep_seconds=keep_seconds)
    pipe.execute()


def _stage_rest(redis, cluster_id: int, staged: Staged, documents: dict[str, GroupDocument]) -> None:
    """Beside the parts' documents: the groups not staged (carried over for a part not read, no
    longer listed), and the staged groups the poll marked as made from a POP retry topic
    (building.mark_retry_topic_groups: it sees every group, a part only its own)."""
    rest = {g: d for g, d in documents.items() if g not in staged.groups}
    marked = [g for g in staged.groups if g in documents and documents[g].made_from_retry_topic]
    for group, raw in zip(marked, redis.hmget(staged.key, marked) if marked else [], strict=True):
        if raw:
            whole = GroupDocument.decode(raw)
            whole.made_from_retry_topic = documents[group].made_from_retry_topic
            rest[group] = whole
    pipe = redis.pipeline(transaction=False)
    stage(pipe, staged.key, rest)
    pipe.execute()


# The index is one JSON list with a line break after every INDEX_CHUNK entries (whitespace to
# JSON): a web process decodes it a chunk at a time and lets its other threads run in between,
# where one json.loads of 50,000 entries held the interpreter for 130 ms, and every request of
# that process waited (live/rows.py decodes a new index beside the requests).
INDEX_CHUNK = 1000


def _index_text(entries: list[dict]) -> bytes:
    chunks = (_dumps(entries[i : i + INDEX_CHUNK])[1:-1] for i in range(0, len(entries), INDEX_CHUNK))
    return b"[" + b",\n".join(chunks) + b"]"


def _index_entries(raw: bytes) -> list[dict]:
    """Decoded a chunk at a time when written so (a raw line break is only ever between chunks:
    JSON escapes those inside strings); otherwise at once."""
    if b"\n" not in raw:
        return json.loads(raw)
    entries = []
    for piece in raw.strip()[1:-1].split(b",\n"):
        entries += json.loads(b"[" + piece + b"]")
        time.sleep(0)  # the other threads' turn
    return entries


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


# the last index decoded per cluster, with the version the poll gave it (or, written without one,
# the bytes it came from): a poll replaces it every 15 s or so, while the groups list (refreshed
# every 5 s by each viewer), the overview and /metrics read it far more often. The version is
# compared first, so an unchanged index of 50,000 groups (12 MB) is not even read.
_decoded: dict[int, tuple[bytes, list[dict], int]] = {}  # cluster -> (version or bytes, entries, length)


# Before the index, a poll wrote every summary in one JSON list under this key: read it until
# the cluster's first poll since (its summaries are whole entries), which removes it.
LEGACY_SUMMARIES = "groups"
# and, until the summaries were read from the documents, each in a hash of their own (a tenth of
# the cluster's memory in Redis at 50,000 groups, for the 50 rows a page shows)
LEGACY = (LEGACY_SUMMARIES, "summaries")


def read_index(redis, cluster_ids: list[int]) -> dict[int, list[dict]]:
    """Each cluster's index entries (shared between callers: read them, never change them)."""
    return read_index_or_kept(redis, cluster_ids, kept_ok=False)[0]


def read_index_or_kept(redis, cluster_ids: list[int], *, kept_ok: bool = True) -> tuple[dict[int, list[dict]], set]:
    """Each cluster's index entries, and the clusters whose index a poll has replaced since: with
    `kept_ok`, the entries decoded before are given for those (when there are any) rather than
    decoding the new ones here (live/rows.py: a thread of the process is making them)."""
    if not cluster_ids:
        return {}, set()
    pipe = redis.pipeline(transaction=False)
    for c in cluster_ids:
        pipe.get(key(c, "index-version"))
        pipe.strlen(key(c, "index"))
    answers = pipe.execute()
    marks = dict(zip(cluster_ids, zip(answers[::2], answers[1::2], strict=True), strict=True))
    found, behind, changed = {}, set(), []
    for cluster_id, mark in marks.items():
        cached = _decoded.get(cluster_id)
        if _current(cached, *mark):
            found[cluster_id] = cached[1]
        elif kept_ok and cached is not None and mark[1]:
            found[cluster_id] = cached[1]
            behind.add(cluster_id)
        else:
            changed.append(cluster_id)
    if changed:
        with _decoding:  # one decode of a new index per process, not one per request waiting for it
            found.update(_decode(redis, [c for c in changed if not _current(_decoded.get(c), *marks[c])]))
            found.update({c: _decoded[c][1] for c in changed if c not in found})
    return {c: found[c] for c in cluster_ids}, behind


def _current(cached, version, length) -> bool:
    # the length too: a writer without versions (an older release beside this one) replaces
    # the index and leaves the version as it was
    return bool(version and length and cached is not None and cached[0] == version and cached[2] == length)


_decoding = threading.Lock()


def _decode(redis, changed: list[int]) -> dict[int, list[dict]]:
    if not changed:
        return {}
    pipe = redis.pipeline(transaction=True)  # the index with its own version
    for c in changed:
        pipe.get(key(c, "index"))
        pipe.get(key(c, "index-version"))
    answers = pipe.execute()
    raws, versions = answers[::2], answers[1::2]
    unindexed = [c for c, raw in zip(changed, raws, strict=True) if not raw]
    if unindexed:
        legacy = dict(zip(unindexed, redis.mget([key(c, LEGACY_SUMMARIES) for c in unindexed]), strict=True))
        raws = [raw or legacy[c] for c, raw in zip(changed, raws, strict=True)]
    found = {}
    for cluster_id, raw, version in zip(changed, raws, versions, strict=True):
        cached = _decoded.get(cluster_id)
        mark = version or raw  # an index written without a version is known by its bytes
        if not raw:
            found[cluster_id] = []
            _decoded.pop(cluster_id, None)
        elif cached is not None and cached[0] == mark and cached[2] == len(raw):
            found[cluster_id] = cached[1]
        else:
            found[cluster_id] = _index_entries(raw)
            _decoded[cluster_id] = (mark, found[cluster_id], len(raw))
    return found


def read_summaries(redis, cluster_id: int, groups: list[str] | None = None) -> dict[str, dict]:
    """The whole summaries of `groups` (None: all) that the last poll wrote, from their documents."""
    name = key(cluster_id, "detail")
    if groups is None:
        found = {g.decode(): d for g, d in redis.hgetall(name).items()}
    elif not groups:
        return {}
    else:
        found = dict(zip(groups, redis.hmget(name, groups), strict=True))
    return {g: GroupDocument.summary_from(d) for g, d in found.items() if d}


def read_detail(redis, cluster_id: int, group: str) -> GroupDocument | None:
    raw = redis.hget(key(cluster_id, "detail"), group)
    return GroupDocument.decode(raw) if raw else None


def read_details(redis, cluster_id: int) -> dict[str, GroupDocument]:
    return {g.decode(): GroupDocument.decode(d) for g, d in redis.hgetall(key(cluster_id, "detail")).items()}


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
            self.cache[group] = GroupDocument.decode(raw) if raw else None
        return self.cache[group]


def last_online(redis, cluster_id: int) -> tuple[dict[str, float], float | None]:
    """(group -> when a poll last saw a client of it online, when the console began watching the
    cluster: None if never polled). Written by consumers/lifecycle/seen.py at every poll."""
    seen = redis.hgetall(key(cluster_id, "last-online"))
    since = redis.get(key(cluster_id, "watching-since"))
    decoded = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in seen.items()}
    return decoded, float(since) if since is not None else None
