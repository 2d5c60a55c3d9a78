"""Compaction and retention of the history's files (layout and names: history_files.py).

Compaction merges a partition's poll files into a part, and a partition's parts into one when
there are many of them or the day is over. It needs no lock and is safe to run on several
hosts at once:
- a part's name comes from the polls it holds: two compactions of the same files write the
  same name, whole, whichever finishes last;
- two compactions that saw different files write two parts that share polls: readers choose
  the files to read (history_files.cover) and drop repeated rows, and the next compaction
  merges the two;
- a file is deleted only once another file holds all its polls and has existed for `grace`
  seconds (longer than a statistics run): a reader that listed the partition before that file
  existed, and reads the files it chose for as long as a run lasts, never finds one gone.
"""

from __future__ import annotations

import datetime as dt
import logging
import time

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from .history_files import POLL_NAME, Listed, cover, list_partitions, part_name, write_file
from .history_rows import SCHEMAS, conform, dates_of, dedupe_rows, sort_rows

log = logging.getLogger(__name__)

MIN_FILES = 4  # poll files merged into a part once a partition has this many
MIN_PARTS = 16  # parts merged into one once a partition has this many (a day's are merged at its end)


def compact(filesystem: pafs.FileSystem, base: str, cluster: str, *, grace: float, today: dt.date,
            min_files: int = MIN_FILES, min_parts: int = MIN_PARTS) -> int:  # fmt: skip
    """One pass over the cluster's partitions; returns how many files were merged."""
    _adopt_staged(filesystem, base, cluster)
    merged = 0
    for name in SCHEMAS:
        folder = f"{base}/{name}/cluster={cluster}"
        for date, listed in sorted(list_partitions(filesystem, folder).items()):
            try:
                merged += _compact_partition(filesystem, f"{folder}/date={date}", name, listed, grace=grace,
                                             closed=date < today.isoformat(), min_files=min_files,
                                             min_parts=min_parts)  # fmt: skip
            except FileNotFoundError as exc:  # another compaction deleted what this one listed: next pass
                log.info("compaction of %s %s %s left for the next pass: %s", name, cluster, date, exc)
    return merged


def _compact_partition(filesystem, folder: str, name: str, listed: Listed, *, grace: float, closed: bool,
                       min_files: int, min_parts: int) -> int:  # fmt: skip
    now = time.time()
    chosen = cover(filesystem, list(listed.mtimes))
    _delete(filesystem, [p for p, by in chosen.superseded.items() if now - listed.mtimes[by] >= grace])
    polls = [p for p in chosen.chosen if POLL_NAME.match(p.rsplit("/", 1)[-1])]
    parts = [p for p in chosen.chosen if p not in polls]
    if chosen.shared or (closed and len(chosen.chosen) > 1) or len(parts) >= min_parts:
        inputs = chosen.chosen
    elif len(polls) >= min_files:
        inputs = polls
    else:
        return 0
    if len(inputs) < 2:
        return 0
    held = frozenset().union(*(chosen.polls[p] for p in inputs))
    target = f"{folder}/{part_name(held)}"
    if target not in listed.mtimes:
        table = ds.dataset(inputs, filesystem=filesystem, schema=SCHEMAS[name], format="parquet").to_table()
        write_file(filesystem, target, sort_rows(dedupe_rows(conform(table, SCHEMAS[name]), name)), held)
    if grace <= 0:
        _delete(filesystem, inputs)
    return len(inputs)


def _delete(filesystem: pafs.FileSystem, paths: list[str]) -> None:
    for path in paths:
        try:
            filesystem.delete_file(path)
        except FileNotFoundError:
            pass  # another compaction deleted it


def prune(filesystem: pafs.FileSystem, base: str, retention_days: int, *, today: dt.date) -> list[str]:
    """Delete the date partitions older than the retention; returns their paths."""
    cutoff = (today - dt.timedelta(days=retention_days)).isoformat()
    removed = []
    for name in SCHEMAS:
        for cluster in _folders(filesystem, f"{base}/{name}"):
            for partition in _folders(filesystem, cluster):
                date = partition.rsplit("/", 1)[-1].removeprefix("date=")
                if partition.rsplit("/", 1)[-1].startswith("date=") and date < cutoff:
                    filesystem.delete_dir(partition)
                    removed.append(partition)
    # the hard-linked snapshots the statistics runs of the previous layout made
    if filesystem.get_file_info(f"{base}/_snapshots").type == pafs.FileType.Directory:
        filesystem.delete_dir(f"{base}/_snapshots")
    return removed


def _folders(filesystem: pafs.FileSystem, path: str) -> list[str]:
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == pafs.FileType.Directory)


def _adopt_staged(filesystem: pafs.FileSystem, base: str, cluster: str) -> None:
    """Rows the previous layout staged and had not flushed (Arrow files under _staging), moved
    into their partitions, each staged file as a file of its own."""
    for name, schema in SCHEMAS.items():
        folder = f"{base}/_staging/{name}/cluster={cluster}"
        for info in filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
            if not info.base_name.endswith(".arrow"):
                continue
            with filesystem.open_input_file(info.path) as source:
                table = conform(ipc.open_file(source).read_all(), schema)
            stem = info.base_name.removesuffix(".arrow")
            for date, rows in dates_of(table).items():
                target = f"{base}/{name}/cluster={cluster}/date={date}/staged-{stem}.parquet"
                write_file(filesystem, target, sort_rows(rows), frozenset([f"file:staged-{stem}.parquet"]))
            _delete(filesystem, [info.path])
