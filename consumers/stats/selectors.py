"""What the statistics pages show, read from the per-day rows in the database and, for the
health heat-map, the hourly Parquet the job wrote. Days without a row are gaps (None)."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

import pyarrow.dataset as ds
from django.conf import settings
from django.db.models import Max, Sum

from .models import ClusterDay, GroupDay, StatsRun

LOW_COVERAGE = 0.9


def days_between(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


def group_days(cluster: str, group: str, first: dt.date, last: dt.date) -> dict[dt.date, GroupDay]:
    rows = GroupDay.objects.filter(cluster=cluster, group=group, date__range=(first, last))
    return {row.date: row for row in rows}


def cluster_days(cluster: str, first: dt.date, last: dt.date) -> dict[dt.date, ClusterDay]:
    return {row.date: row for row in ClusterDay.objects.filter(cluster=cluster, date__range=(first, last))}


def cluster_totals(cluster: str, first: dt.date, last: dt.date) -> dict[dt.date, dict]:
    """Per day, the sums over the cluster's groups (consumed, produced, retries, DLQ, breach)."""
    rows = (
        GroupDay.objects.filter(cluster=cluster, date__range=(first, last))
        .values("date")
        .annotate(
            consumed=Sum("consumed"),
            produced=Sum("produced"),
            retries=Sum("retries"),
            dlq_arrivals=Sum("dlq_arrivals"),
            breach_minutes=Sum("breach_minutes"),
        )
    )
    return {row["date"]: row for row in rows}


def top_lists(
    cluster: str, first: dt.date, last: dt.date, limit: int = 10, within=None
) -> dict[str, list[tuple[str, float]]]:
    """Over the period: worst daily p95 lag seconds, total breach minutes, total DLQ arrivals
    (of the groups `within` lets through: identity's filter on cluster and group; None: all)."""
    period = GroupDay.objects.filter(cluster=cluster, date__range=(first, last))
    period = (period if within is None else period.filter(within)).values("group")
    lists = {
        "lag_seconds_p95": period.annotate(value=Max("lag_seconds_p95")),
        "breach_minutes": period.annotate(value=Sum("breach_minutes")),
        "dlq_arrivals": period.annotate(value=Sum("dlq_arrivals")),
    }
    return {
        name: [(row["group"], row["value"]) for row in rows.filter(value__gt=0).order_by("-value", "group")[:limit]]
        for name, rows in lists.items()
    }


def output_table(name: str, clusters: list[str], first: dt.date, last: dt.date, *, columns=None, where=None):
    """Rows of one of the job's Parquet tables for the clusters and days (None: the job has
    not written it yet). `where` narrows further (a pyarrow expression)."""
    location = f"{settings.STATS_OUTPUT_URL.rstrip('/')}/{name}"
    try:
        dataset = ds.dataset(location, format="parquet", partitioning="hive")
    except (FileNotFoundError, OSError):
        return None
    wanted = (
        ds.field("cluster").isin(list(clusters))
        & (ds.field("date") >= first.isoformat())
        & (ds.field("date") <= last.isoformat())
    )
    return dataset.to_table(columns=columns, filter=wanted if where is None else wanted & where)


def health_cells(cluster: str, group: str, first: dt.date, last: dt.date) -> dict[tuple[dt.date, int], dict]:
    """(day, hour) -> {state: minutes} from the job's group_health table."""
    table = output_table("group_health", [cluster], first, last, columns=["hour", "state", "minutes"],
                         where=ds.field("group") == group)  # fmt: skip
    cells: dict[tuple[dt.date, int], dict] = defaultdict(dict)
    for row in table.to_pylist() if table is not None else []:
        hour = row["hour"]
        cells[(hour.date(), hour.hour)][row["state"]] = row["minutes"]
    return cells


def recent_runs(limit: int = 50, clusters: list[str] | None = None) -> list[StatsRun]:
    """The latest runs; with `clusters`, those that computed one of them (a scoped user's)."""
    found = StatsRun.objects.select_related("requested_by")
    if clusters is None:
        return list(found[:limit])
    wanted = set(clusters)
    # the clusters are a JSON list, which SQLite cannot filter on: the latest runs, filtered here
    return [run for run in found[: limit * 10] if wanted & set(run.clusters or [])][:limit]


def coverage_gaps(days: list, coverage: dict) -> tuple[list, list]:
    """The periods with no statistics at all, and those with some polls missing (coverage
    under 100 %; under LOW_COVERAGE the charts also shade them)."""
    missing = [d for d in days if coverage.get(d) is None]
    partial = [d for d in days if coverage.get(d) is not None and coverage[d] < 1.0]
    return missing, partial


def coverage_text(share: float) -> str:
    """A share under 100 % never shown as "100.0 %": rounded down to 0.1 %."""
    return f"{math.floor(share * 1000) / 10:.1f} %"
