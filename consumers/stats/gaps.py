"""Days the statistics cannot compute: the rule and its words, shared by the job (which finds
them in the history it reads) and the run (which finds them in the files it hands the job,
before it starts Spark at all). Plain Python: the job's driver imports it too."""

from __future__ import annotations

import datetime as dt


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
