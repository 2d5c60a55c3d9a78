"""Days the statistics cannot compute: the rule and its words, shared by the job (which finds
them in the history it reads) and the run (which, for a local history, finds them before it
starts Spark at all). Plain Python: the job's driver imports it too."""

from __future__ import annotations

import datetime as dt
from pathlib import Path


def why_skipped(day: dt.date, as_of: dt.date, kept_days: int | None) -> str:
    if kept_days and day < as_of - dt.timedelta(days=kept_days):
        return f"no history for {day}: the history is kept {kept_days} days"
    return f"no poll of this cluster on {day} in the history"


def skipped(clusters: list[str], first: dt.date, last: dt.date, polled: set[tuple[str, str]], params: dict) -> list:
    """Each (cluster, day) of the period without polls, with why: the summary's and the run's
    `skipped` (`params`: the run's parameters, for as_of and the history's retention)."""
    as_of = dt.date.fromisoformat(params["as_of"][:10])
    days = [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]
    return [
        {"cluster": c, "date": d.isoformat(), "why": why_skipped(d, as_of, params.get("history_retention_days"))}
        for c in clusters
        for d in days
        if (c, d.isoformat()) not in polled
    ]


def polled_locally(history_url: str, clusters: list[str], days: list[dt.date]) -> set[tuple[str, str]] | None:
    """The (cluster, day) pairs a local history has poll files for; None when the history is
    not a local directory, or not there at all (the job reads a shared store, and says what is
    wrong with a location that does not exist)."""
    path = history_url.removeprefix("file://")
    if "://" in path or not Path(path).is_dir():
        return None
    root = Path(path) / "group_stats"
    return {
        (cluster, day.isoformat())
        for cluster in clusters
        for day in days
        if any((root / f"cluster={cluster}" / f"date={day.isoformat()}").glob("*.parquet"))
    }
