"""A bounded local spool for history rows that could not be written.

The live view must not wait for the history store, but a poll's rows that fail to reach it
(a full or unmounted disk, a permission taken away) were lost silently, and the statistics then
counted the gap as if nothing had been polled. Now such a poll's tables go to a spool on local
disk (Arrow IPC, one folder per poll), and every later poll first writes what is spooled, oldest
first, then its own rows. The spool keeps at most HISTORY_SPOOL_MAX_POLLS polls per cluster;
past that the oldest are dropped and counted, so the cluster page can say what was lost.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from .history import HistoryStore

WRITE_ERRORS = (OSError, pa.ArrowException)


class HistorySpool:
    def __init__(self, root: Path, *, max_polls: int):
        self.root, self.max_polls = Path(root), max_polls

    def keep(self, cluster: str, polled_at: float, tables: dict[str, pa.Table]) -> int:
        """Spool one poll's tables; returns how many of the oldest polls were dropped for room."""
        folder = self._dir(cluster) / f"{polled_at:017.3f}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, table in tables.items():
            with ipc.new_file(folder / f"{name}.arrow", table.schema) as writer:
                writer.write_table(table)
        polls = self.polls(cluster)
        dropped = polls[: max(0, len(polls) - self.max_polls)]
        for old in dropped:
            shutil.rmtree(old, ignore_errors=True)
        return len(dropped)

    def polls(self, cluster: str) -> list[Path]:
        folder = self._dir(cluster)
        return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.exists() else []

    def drain(self, cluster: str, store: HistoryStore) -> int:
        """Write the spooled polls to the store, oldest first; stops at the first failure (which
        is raised) with the rest still spooled. Returns how many were written."""
        written = 0
        for folder in self.polls(cluster):
            tables = {}
            for path in sorted(folder.glob("*.arrow")):
                with ipc.open_file(path) as reader:
                    tables[path.stem] = reader.read_all()
            store.append(cluster, tables)
            shutil.rmtree(folder, ignore_errors=True)
            written += 1
        return written

    def _dir(self, cluster: str) -> Path:
        return self.root / cluster


def write_history(spool: HistorySpool, store: HistoryStore, cluster: str, polled_at: float, tables: dict,
                  previous: dict | None) -> dict | None:  # fmt: skip
    """Write this poll's rows after anything spooled; on failure spool them. Returns the
    cluster's history state for its meta: None when all is written, else
    {pending_polls, since, error, dropped} (`previous`: the state the last poll left)."""
    try:
        spool.drain(cluster, store)
        store.append(cluster, tables)
        return None
    except WRITE_ERRORS as exc:
        error = f"{type(exc).__name__}: {exc}"
    dropped = spool.keep(cluster, polled_at, tables)
    return {
        "pending_polls": len(spool.polls(cluster)),
        "since": previous["since"] if previous else polled_at,
        "error": error,
        "dropped": (previous or {}).get("dropped", 0) + dropped,
    }
