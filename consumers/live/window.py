"""The health window in Redis: every group's samples of the recent polls, which health and the
drain forecast judge (publish.py) and the alerts' rates read.

    rmqc:<id>:window            list, newest first: {"t": poll time, "h": the poll's hash}
    rmqc:<id>:window:<poll id>  hash: "<first group>\\n<last group>" -> {group: sample} of that range

A poll's samples are kept by ranges of group names: a whole poll writes one range, a split poll
(parts.py) one per part, written by the worker that read and judged the part in the transaction
that stages its documents (staging.stage_open: a part too late for its poll writes neither). A
part judges its groups on the fields whose ranges overlap its own, so it decodes about its share
of the window, not every group's samples (at 50,000 groups, that was most of its health stage).
Entries written before ranges ({"t", "s": every sample}) are still read until they age out.

A range's value is its JSON compressed (zlib, level 1): at 50,000 groups with lagging queues,
polled every 16 s, the window's entries were most of Redis's memory (409 MB used after the polls,
182 MB compressed); a 2,500-group range is about a quarter of its JSON, for 4 ms to write and
2 ms to read. Ranges written before as plain JSON are read as they are. A worker of the release
before this one cannot read a compressed range: its poll fails (the groups stale, with the
reason) until it is replaced, as a rolling deploy does within a poll or two.
"""

from __future__ import annotations

import json
import uuid
import zlib

from .health import Sample
from .jsonwire import dumps, loads

WINDOW_ENTRIES = 120  # covers windows up to 30 min at the default 15 s interval
# a range holds this many groups at most: a part (12,500 groups) writes five, and judges its
# groups a range at a time (Reader), holding their samples only (at 14 polls a part's whole
# window decoded was about 300 MB)
RANGE_GROUPS = 2500
UNPUBLISHED_SECONDS = 900  # a split poll's ranges, written before the poll is published, at most


def key(cluster_id: int, name: str) -> str:
    """A cluster's key in Redis (snapshots.py lists them; it takes this one)."""
    return f"rmqc:{cluster_id}:{name}"


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def hash_key(cluster_id: int, window_id: str) -> str:
    return key(cluster_id, f"window:{window_id}")


def write_range(pipe, cluster_id: int, window_id: str, samples: dict[str, Sample]) -> None:
    """These groups' samples as one range of the poll's entry (not part of the window until the
    poll pushes its entry: `push`)."""
    if not samples:
        return
    names = sorted(samples)
    for at in range(0, len(names), RANGE_GROUPS):
        chunk = names[at : at + RANGE_GROUPS]
        wire = {g: samples[g].to_wire() for g in chunk}
        pipe.hset(hash_key(cluster_id, window_id), f"{chunk[0]}\n{chunk[-1]}", zlib.compress(dumps(wire), 1))
    pipe.expire(hash_key(cluster_id, window_id), UNPUBLISHED_SECONDS)


def push(redis, pipe, cluster_id: int, window_id: str, polled_at: float, *, keep_seconds: float | None = None) -> None:
    """The poll's entry into the window (in the poll's transaction `pipe`); entries older than
    `keep_seconds` (the longest health window: no poll will judge on them again), and any beyond
    WINDOW_ENTRIES, dropped with their ranges. At 50,000 groups an entry is about 3 MB: 120 of
    them kept for a 5-minute window were most of the cluster's Redis memory."""
    keep = _kept_entries(redis, cluster_id, polled_at - keep_seconds) if keep_seconds else WINDOW_ENTRIES - 1
    dropped = redis.lrange(key(cluster_id, "window"), keep, -1)
    pipe.persist(hash_key(cluster_id, window_id))
    pipe.lpush(key(cluster_id, "window"), dumps({"t": polled_at, "h": hash_key(cluster_id, window_id)}))
    pipe.ltrim(key(cluster_id, "window"), 0, keep)
    gone = [name for name in map(_hash_of, dropped) if name]
    if gone:
        pipe.delete(*gone)


def _kept_entries(redis, cluster_id: int, cutoff: float, step: int = 16) -> int:
    """How many of the newest entries are at or after `cutoff` (at most WINDOW_ENTRIES - 1). An
    entry written before ranges (large) stops the count there: those age out by number."""
    kept = 0
    while kept < WINDOW_ENTRIES - 1:
        chunk = redis.lrange(key(cluster_id, "window"), kept, kept + step - 1)
        for raw in chunk:
            if len(raw) > 1000 or _entry_time(raw) < cutoff:
                return kept if len(raw) <= 1000 else WINDOW_ENTRIES - 1
            kept += 1
        if len(chunk) < step:
            break
    return min(kept, WINDOW_ENTRIES - 1)


def _inside(redis, cluster_id: int, since: float) -> list[bytes]:
    """The entries newer than `since`, oldest first."""
    inside = []
    for raw in redis.lrange(key(cluster_id, "window"), 0, WINDOW_ENTRIES - 1):  # newest first
        if _entry_time(raw) < since:
            break  # and so is every older one: not decoded
        inside.append(raw)
    inside.reverse()
    return inside


class Reader:
    """The window read a range of groups at a time, in ascending order (`samples`): each stored
    range is decoded once, when the groups asked first overlap it, and dropped once they have
    passed it: a few thousand groups' samples held at a time. `read` is one call of it."""

    def __init__(self, redis, cluster_id: int, *, since: float):
        self.redis = redis
        inside = _inside(redis, cluster_id, since)
        self.entries = [(_hash_of(raw), raw) for raw in inside]  # oldest first; (None, raw): legacy
        names = [name for name, _ in self.entries if name]
        pipe = redis.pipeline(transaction=False)
        for name in names:
            pipe.hkeys(name)
        self.ranges = {name: [_span(f) for f in fields] for name, fields in zip(names, pipe.execute(), strict=True)}
        self.decoded: dict[tuple[str, tuple[str, str]], dict] = {}
        self.legacy: dict[int, dict] = {}

    def samples(self, groups: list[str]) -> dict[str, list[Sample]]:
        """These groups' samples (sorted, and after every group asked before), oldest first."""
        if not groups:
            return {}
        first, last = groups[0], groups[-1]
        for held in [k for k in self.decoded if k[1][1] < first]:
            del self.decoded[held]  # wholly before these groups: no later call needs it
        self._decode(
            [(name, span) for name, spans in self.ranges.items() for span in spans if _meets(span, first, last)]
        )
        per_entry = []
        for index, (name, _) in enumerate(self.entries):
            if name is None:
                per_entry.append([self._legacy(index)])
            else:
                held = [(name, span) for span in self.ranges[name] if _meets(span, first, last)]
                per_entry.append([self.decoded[h] for h in held if h in self.decoded])
        found = {}
        for group in groups:
            samples = [Sample.from_wire(part[group]) for parts in per_entry for part in parts if group in part]
            if samples:
                found[group] = samples
        return found

    def everything(self) -> dict[str, list[Sample]]:
        """Every group's samples, oldest first: each range decoded, in one pass (for a reader of
        the whole window, such as the alerts' rates of a split poll's groups)."""
        self._decode([(name, span) for name, spans in self.ranges.items() for span in spans])
        found: dict[str, list[Sample]] = {}
        for index, (name, _) in enumerate(self.entries):
            parts = [self._legacy(index)] if name is None else [self.decoded[(name, s)] for s in self.ranges[name]]
            for part in parts:
                for group, wire in part.items():
                    found.setdefault(group, []).append(Sample.from_wire(wire))
        return found

    def _decode(self, ranges: list[tuple[str, tuple[str, str]]]) -> None:
        wanted = [held for held in ranges if held not in self.decoded]
        if wanted:
            pipe = self.redis.pipeline(transaction=False)
            for name, span in wanted:
                pipe.hget(name, f"{span[0]}\n{span[1]}")
            for held, blob in zip(wanted, pipe.execute(), strict=True):
                self.decoded[held] = _unpacked(blob) if blob else {}

    def _legacy(self, index: int) -> dict:
        if index not in self.legacy:
            self.legacy[index] = loads(self.entries[index][1])["s"]
        return self.legacy[index]


def _unpacked(blob: bytes) -> dict:
    """A range's samples: compressed JSON, or plain JSON as ranges were written before."""
    return loads(blob if blob[:1] == b"{" else zlib.decompress(blob))


def _meets(span: tuple[str, str], first: str, last: str) -> bool:
    return not (span[1] < first or span[0] > last)


def _span(field: bytes | str) -> tuple[str, str]:
    first, last = (field.decode() if isinstance(field, bytes) else field).split("\n", 1)
    return first, last


def read(redis, cluster_id: int, *, since: float, groups: list[str] | None = None) -> dict[str, list[Sample]]:
    """Each group's samples newer than `since`, oldest first; with `groups`, theirs only, read
    from the ranges that overlap them."""
    reader = Reader(redis, cluster_id, since=since)
    return reader.everything() if groups is None else reader.samples(sorted(groups))


def _hash_of(raw: bytes | str) -> str | None:
    """The entry's hash; None for an entry written before ranges (every sample in it: large)."""
    if len(raw) > 1000:
        return None
    entry = json.loads(raw)
    return entry["h"] if "h" in entry and "s" not in entry else None


def _entry_time(raw: bytes | str) -> float:
    """An entry's poll time without decoding its samples: entries put "t" first."""
    head = raw[:40].decode() if isinstance(raw, bytes) else raw[:40]
    if head.startswith('{"t":'):
        try:
            return float(head[5 : head.index(",")])
        except ValueError:
            pass
    return json.loads(raw)["t"]
