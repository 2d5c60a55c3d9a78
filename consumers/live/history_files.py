"""Where the history lives and how its files are named, written, listed and chosen.

HISTORY_URL is a local folder, a file:// URL, a shared mount, or an s3:// / hdfs:// URL, opened
through pyarrow's file system layer; the statistics job reads the same place through Hadoop's
(`spark_url`: file:// for a local folder, s3a:// for s3://). Layout, hive-style partitions:

    <table>/cluster=<name>/date=<YYYY-MM-DD>/poll-<poll id>.parquet
    <table>/cluster=<name>/date=<YYYY-MM-DD>/part-<first id>-<last id>-<digest>.parquet

A poll file holds one poll's rows of that date, named by the poll id (the poll's start, epoch
ms): written again, it is written under the same name, so a retried write never adds a copy.
A part is a compaction of several files, named from the ids of the polls it holds (its footer
lists them), so two compactions of the same polls write the same name. Files appear whole:
written under a hidden temporary name and renamed where renaming is atomic (a local or
mounted folder, HDFS), put in one request where it is not (an object store, where an object is
visible only once complete). Names starting with "." are hidden from pyarrow and Spark alike.

A poll can therefore be in two files for a while (a part and the files it was made from, or
two parts of two compactions that overlap). `cover` chooses, per partition, the files to read:
those no other file contains, and whether any two of them still share a poll (the reader then
drops the repeated rows). Files written before this layout (other names, no footer list) are
each taken as a unit of their own, as the store that wrote them never left a poll in two.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

POLL_NAME = re.compile(r"^poll-(\d{13})\.parquet$")
PART_NAME = re.compile(r"^part-\d{13}-\d{13}-[0-9a-f]{16}\.parquet$")
POLLS_KEY = b"history_polls"  # a part's footer: the poll ids it holds, comma separated
RENAMES = {"local", "hdfs"}  # file systems whose rename is atomic; others are written in one put
SPARK_SCHEMES = {"s3": "s3a"}  # Hadoop's name for the same store


def open_location(url: str) -> tuple[pafs.FileSystem, str]:
    """The file system and base path of a history URL (a plain path is a local folder)."""
    if "://" not in url:
        return _LOCAL, os.path.abspath(url)
    return _open_url(url)


_LOCAL = pafs.LocalFileSystem()


@functools.cache
def _open_url(url: str) -> tuple[pafs.FileSystem, str]:
    # one per URL and process: opening an object store resolves its region over the network
    filesystem, path = pafs.FileSystem.from_uri(url)
    return filesystem, path.rstrip("/")


def spark_url(url: str) -> str:
    """The same location as Spark (Hadoop's file systems) names it."""
    if "://" not in url:
        return f"file://{os.path.abspath(url)}"
    scheme, rest = url.split("://", 1)
    # an object store's options in the query (endpoint_override, region, ...) are pyarrow's;
    # Spark takes them from its configuration (STATS_SPARK_CONF: spark.hadoop.fs.s3a.endpoint)
    rest = rest.split("?", 1)[0]
    return f"{SPARK_SCHEMES.get(scheme, scheme)}://{rest}".rstrip("/")


def poll_name(poll_id: int) -> str:
    return f"poll-{poll_id:013d}.parquet"


def part_name(polls: frozenset[str]) -> str:
    numbers = sorted(int(p) for p in polls if p.isdigit()) or [0]
    digest = hashlib.sha256("\n".join(sorted(polls)).encode()).hexdigest()[:16]
    return f"part-{numbers[0]:013d}-{numbers[-1]:013d}-{digest}.parquet"


def write_file(filesystem: pafs.FileSystem, path: str, table: pa.Table, polls: frozenset[str]) -> None:
    """Write `table` at `path`, readable only once whole, its footer listing its polls."""
    metadata = {**(table.schema.metadata or {}), POLLS_KEY: ",".join(sorted(polls)).encode()}
    table = table.replace_schema_metadata(metadata)
    folder, name = path.rsplit("/", 1)
    filesystem.create_dir(folder, recursive=True)
    if filesystem.type_name not in RENAMES:
        pq.write_table(table, path, filesystem=filesystem, compression="zstd", row_group_size=64 * 1024)
        return
    temporary = f"{folder}/.{name}.{uuid.uuid4().hex[:8]}.tmp"
    pq.write_table(table, temporary, filesystem=filesystem, compression="zstd", row_group_size=64 * 1024)
    filesystem.move(temporary, path)


@dataclass
class Listed:
    """A partition's files as listed: path -> modification time (epoch seconds)."""

    mtimes: dict[str, float] = field(default_factory=dict)


def list_partitions(filesystem: pafs.FileSystem, base: str, since: str | None = None) -> dict[str, Listed]:
    """The date partitions under `base` (<table>/cluster=<name>) with their visible files, by
    date; dates before `since` (YYYY-MM-DD) left out."""
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    found: dict[str, Listed] = {}
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
            continue
        folder = info.path.rsplit("/", 2)
        if len(folder) < 3 or not folder[1].startswith("date=") or info.base_name.startswith((".", "_")):
            continue
        date = folder[1].removeprefix("date=")
        if since is None or date >= since:
            mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
            found.setdefault(date, Listed()).mtimes[info.path] = mtime
    return found


def polls_of(filesystem: pafs.FileSystem, path: str) -> frozenset[str]:
    """The polls a file holds: a poll file's from its name, a part's from its footer (read
    once per process: a part's name is derived from its polls, so its content never changes),
    and any other file is a unit of its own."""
    name = path.rsplit("/", 1)[-1]
    match = POLL_NAME.match(name)
    if match:
        return frozenset([str(int(match.group(1)))])
    if PART_NAME.match(name):
        key = (id(filesystem), path)
        if key not in _FOOTERS:
            if len(_FOOTERS) >= 8192:
                _FOOTERS.clear()
            with filesystem.open_input_file(path) as source:
                value = (pq.read_metadata(source).metadata or {}).get(POLLS_KEY)
            _FOOTERS[key] = frozenset(value.decode().split(",")) if value else None
        if _FOOTERS[key] is not None:
            return _FOOTERS[key]
    return frozenset([f"file:{name}"])


_FOOTERS: dict[tuple[int, str], frozenset[str] | None] = {}  # (file system, path) -> a part's polls


@dataclass
class Cover:
    """The files to read of a partition, and what the others are waiting for."""

    chosen: list[str]
    superseded: dict[str, str]  # a file whose polls are all in another -> that other (chosen) file
    shared: bool  # some poll is in two chosen files: readers must drop repeated rows
    polls: dict[str, frozenset[str]]


def cover(filesystem: pafs.FileSystem, paths: list[str]) -> Cover:
    """Every file whose polls no other file holds all of, largest first; the rest superseded."""
    polls = {path: polls_of(filesystem, path) for path in paths}
    chosen: list[str] = []
    holders: dict[str, list[str]] = {}  # poll -> chosen files holding it
    superseded = {}
    for path in sorted(paths, key=lambda p: (-len(polls[p]), p)):
        some = next(iter(polls[path]))
        by = next((c for c in holders.get(some, ()) if polls[path] <= polls[c]), None)
        if by is not None:
            superseded[path] = by
            continue
        chosen.append(path)
        for poll in polls[path]:
            holders.setdefault(poll, []).append(path)
    counts = Counter(poll for path in chosen for poll in polls[path])
    return Cover(sorted(chosen), superseded, any(n > 1 for n in counts.values()), polls)
