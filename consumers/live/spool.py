"""A bounded spool on this host's disk for history rows that could not be written.

The live view must not wait for the history store, but a poll's rows that fail to reach it
(a full or unmounted disk, an object store down, a permission taken away) were lost silently,
and the statistics then counted the gap as if nothing had been polled. Now such a poll's rows
go to a spool on local disk (Arrow IPC, one folder per poll, named by its poll id), and every
later poll of that cluster on this host first writes what is spooled, then its own rows. The
spooled rows are the recorded ones (history_state.record_poll stepped them from the shared
state when they were polled), so they are written as they would have been at once, whenever
they are written and whatever other hosts wrote meanwhile; a poll written twice is one file.
The spool keeps at most HISTORY_SPOOL_MAX_POLLS polls per cluster; past that the oldest are
dropped and counted, so the cluster page can say what was lost.

Each host's backlog is kept in Redis under its own name (`record_backlog`): the next poll of a
cluster may run on another host, whose spool is empty, and the Clusters page must still say
that this host holds polls it has not written.
"""

from __future__ import annotations

import json
import shutil
import socket
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from .history import HistoryStore
from .history_rows import unstepped

WRITE_ERRORS = (OSError, pa.ArrowException)


class HistorySpool:
    def __init__(self, root: Path, *, max_polls: int):
        self.root, self.max_polls = Path(root), max_polls
        # which host's spool: two workers on one machine with their own spools are two hosts
        self.host = f"{socket.gethostname()}:{self.root}"

    def keep(self, cluster: str, poll_id: int, tables: dict[str, pa.Table]) -> int:
        """Spool one recorded poll's tables; returns how many of the oldest polls were dropped
        for room. The folder appears whole (renamed into place), so a drain never reads half."""
        folder = self._dir(cluster) / f"{poll_id:013d}"
        partial = self._dir(cluster) / f".{folder.name}.{uuid.uuid4().hex[:8]}"
        partial.mkdir(parents=True)
        for name, table in tables.items():
            with ipc.new_file(partial / f"{name}.arrow", table.schema) as writer:
                writer.write_table(table)
        shutil.rmtree(folder, ignore_errors=True)  # the same poll spooled before: this is the same
        partial.rename(folder)
        polls = self.polls(cluster)
        dropped = polls[: max(0, len(polls) - self.max_polls)]
        for old in dropped:
            shutil.rmtree(old, ignore_errors=True)
        return len(dropped)

    def polls(self, cluster: str) -> list[Path]:
        folder = self._dir(cluster)
        if not folder.exists():
            return []
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))

    def drain(self, cluster: str, store: HistoryStore) -> int:
        """Write the spooled polls to the store, oldest first; stops at the first failure (which
        is raised) with the rest still spooled. Returns how many were written."""
        written = 0
        for folder in self.polls(cluster):
            tables = {}
            for path in sorted(folder.glob("*.arrow")):
                with ipc.open_file(path) as reader:
                    tables[path.stem] = reader.read_all()
            if "." in folder.name:
                # spooled by the previous version, before its steps were computed: no steps now
                store.write(cluster, int(float(folder.name) * 1000), unstepped(tables))
            else:
                store.write(cluster, int(folder.name), tables)
            shutil.rmtree(folder, ignore_errors=True)
            written += 1
        return written

    def _dir(self, cluster: str) -> Path:
        return self.root / cluster


def write_history(spool: HistorySpool, store: HistoryStore, cluster: str, polled_at: float, tables: dict,
                  previous: dict | None) -> dict | None:  # fmt: skip
    """Record this poll (the shared state: an error there is the poll's), then write its rows
    after anything spooled; on failure spool them. Returns the cluster's history state for its
    meta: None when all is written, else {pending_polls, since, error, dropped} (`previous`:
    the state the last poll left)."""
    poll_id = int(polled_at * 1000)
    recorded = store.record(cluster, poll_id, tables)
    try:
        spool.drain(cluster, store)
        if recorded is not None:
            store.write(cluster, poll_id, recorded)
            store.confirm(cluster, poll_id, recorded)  # safe in the history
        return None
    except WRITE_ERRORS as exc:
        error = f"{type(exc).__name__}: {exc}"
    dropped = 0
    if recorded is not None:
        dropped = spool.keep(cluster, poll_id, recorded)
        store.confirm(cluster, poll_id, recorded)  # safe in the spool, which writes it as recorded
    return {
        "pending_polls": len(spool.polls(cluster)),
        "since": previous["since"] if previous else polled_at,
        "error": error,
        "dropped": (previous or {}).get("dropped", 0) + dropped,
    }


def _backlog_key(cluster_id: int) -> str:
    return f"rmqc:{cluster_id}:spools"


def record_backlog(redis, cluster_id: int, host: str, state: dict | None) -> dict[str, dict]:
    """Store this host's backlog of a cluster (None: nothing waits here) and return every
    host's, by host."""
    key = _backlog_key(cluster_id)
    if state is None:
        redis.hdel(key, host)
    else:
        redis.hset(key, host, json.dumps(state))
    return {name.decode(): json.loads(raw) for name, raw in sorted(redis.hgetall(key).items())}


def own_backlog(redis, cluster_id: int, host: str) -> dict | None:
    raw = redis.hget(_backlog_key(cluster_id), host)
    return json.loads(raw) if raw else None
