"""What a lag report says, independent of its format: the rows per group and period (with a
row for every period that has no statistics: a gap is shown as a gap, never as zero), one
summary row per group, and the report's source, time zone and coverage.

Daily reports read the per-day rows the nightly job left in the database; hourly ones read
the job's group_hourly Parquet. The writers (csvfile, xlsx, pdf) only lay this out.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.translation import gettext as _

from ..identity import EVERYTHING, VIEW, Scope, scope_q
from ..models import Cluster
from ..stats.models import ClusterDay, GroupDay
from ..stats.selectors import LOW_COVERAGE, coverage_text, days_between, output_table

# (key, header, kind): kind drives the XLSX number format and the PDF's alignment
DETAIL_COLUMNS = [
    ("cluster", "cluster", "text"),
    ("group", "group", "text"),
    ("period", "period start (UTC)", "period"),
    ("status", "status", "text"),
    ("coverage", "coverage", "percent"),
    ("consumed", "consumed", "int"),
    ("produced", "produced", "int"),
    ("retries", "retries", "int"),
    ("dlq_arrivals", "DLQ arrivals", "int"),
    ("resets", "resets", "int"),
    ("incidents", "incidents", "int"),
    ("lag_p50", "lag p50 (msgs)", "float"),
    ("lag_p95", "lag p95 (msgs)", "float"),
    ("lag_max", "lag max (msgs)", "float"),
    ("lag_seconds_p50", "lag p50 (s)", "float"),
    ("lag_seconds_p95", "lag p95 (s)", "float"),
    ("lag_seconds_max", "lag max (s)", "float"),
    ("breach_minutes", "SLO breach (min)", "float"),
    ("slo_seconds", "SLO (s)", "float"),
]
SUMMARY_COLUMNS = [
    ("cluster", "cluster", "text"),
    ("group", "group", "text"),
    ("periods", "periods with statistics", "int"),
    ("missing", "periods without", "int"),
    ("coverage", "coverage", "percent"),
    ("consumed", "consumed", "int"),
    ("produced", "produced", "int"),
    ("retries", "retries", "int"),
    ("dlq_arrivals", "DLQ arrivals", "int"),
    ("incidents", "incidents", "int"),
    ("breach_minutes", "SLO breach (min)", "float"),
    ("lag_seconds_p95", "worst p95 lag (s)", "float"),
    ("lag_max", "max lag (msgs)", "float"),
]
SUMMED = ("consumed", "produced", "retries", "dlq_arrivals", "incidents", "breach_minutes")
WORST = ("lag_seconds_p95", "lag_max")


@dataclass(frozen=True)
class ReportSpec:
    clusters: tuple[str, ...]
    first: dt.date
    last: dt.date
    granularity: str = "daily"
    group_filter: str = ""
    scope: Scope = EVERYTHING  # the groups its maker sees


@dataclass
class ReportContent:
    spec: ReportSpec
    source: str
    generated_at: dt.datetime
    periods: list
    detail: list[dict] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)
    coverage: dict[str, float | None] = field(default_factory=dict)  # per cluster
    time_zone: str = "UTC"

    @property
    def notes(self) -> list[str]:
        notes = [
            _("Times are %(zone)s. Empty cells are unknown (no statistics), never zero.") % {"zone": self.time_zone}
        ]
        for cluster, share in self.coverage.items():
            if share is None:
                notes.append(_("%(cluster)s: no statistics at all in this range.") % {"cluster": cluster})
            elif share < 1.0:
                recorded = {"cluster": cluster, "recorded": coverage_text(share)}
                notes.append(
                    _("%(cluster)s: only %(recorded)s of the expected polls were recorded in this range.") % recorded
                )
        return notes


def periods_of(spec: ReportSpec) -> list:
    days = days_between(spec.first, spec.last)
    if spec.granularity == "daily":
        return days
    return [dt.datetime.combine(d, dt.time(h), tzinfo=dt.UTC) for d in days for h in range(24)]


def build_content(spec: ReportSpec, progress: Callable[[int, str], None] = lambda pct, stage: None) -> ReportContent:
    periods = periods_of(spec)
    progress(5, "reading the statistics")
    rows = _daily_rows(spec) if spec.granularity == "daily" else _hourly_rows(spec)
    source = (
        "nightly statistics, daily rows (database)"
        if spec.granularity == "daily"
        else "nightly statistics, hourly aggregates (Parquet)"
    )
    content = ReportContent(spec=spec, source=source, generated_at=timezone.now(), periods=periods)
    by_group: dict[tuple[str, str], dict] = defaultdict(dict)
    for row in rows:
        by_group[(row["cluster"], row["group"])][row["period"]] = row
    progress(30, f"laying out {len(by_group)} groups")
    for (cluster, group), found in sorted(by_group.items()):
        for period in periods:
            row = found.get(period)
            content.detail.append(_detail(cluster, group, period, row))
        content.summary.append(_summary(cluster, group, [found.get(p) for p in periods]))
    content.coverage = _cluster_coverage(spec)
    return content


def _detail(cluster: str, group: str, period, row: dict | None) -> dict:
    if row is None:
        return {"cluster": cluster, "group": group, "period": period, "status": "no statistics"}
    if row["coverage"] >= 1.0:
        status = "ok"
    elif row["coverage"] >= LOW_COVERAGE:
        status = f"partial coverage ({coverage_text(row['coverage'])})"
    else:
        status = f"low coverage ({row['coverage']:.0%})"
    return {**row, "status": status}


def _summary(cluster: str, group: str, rows: list[dict | None]) -> dict:
    present = [r for r in rows if r is not None]
    expected = sum(r["expected_polls"] for r in present)
    typical = max((r["expected_polls"] for r in present), default=0)
    expected += typical * (len(rows) - len(present))  # a missing period was expected too
    summary = {
        "cluster": cluster,
        "group": group,
        "periods": len(present),
        "missing": len(rows) - len(present),
        "coverage": sum(r["polls"] for r in present) / expected if expected else None,
    }
    for key in SUMMED:
        known = [r[key] for r in present if r.get(key) is not None]
        summary[key] = sum(known) if known else None
    for key in WORST:
        known = [r[key] for r in present if r.get(key) is not None]
        summary[key] = max(known) if known else None
    return summary


def _matches(cluster: str, group: str, spec: ReportSpec) -> bool:
    return spec.group_filter.lower() in group.lower() and spec.scope.sees_group(cluster, group)


def _daily_rows(spec: ReportSpec) -> list[dict]:
    keys = ["cluster", "group", "date", *(k for k, _, _ in DETAIL_COLUMNS[4:] if k != "status"), "polls"]
    keys.append("expected_polls")
    query = spec_rows(spec)
    return [{**row, "period": row.pop("date")} for row in query.values(*keys)]


def spec_rows(spec: ReportSpec):
    """The GroupDay rows of the spec: its clusters, days, group filter and maker's scope."""
    query = GroupDay.objects.filter(cluster__in=spec.clusters, date__range=(spec.first, spec.last))
    if spec.group_filter:
        query = query.filter(group__icontains=spec.group_filter)
    within = scope_q(spec.scope, VIEW, cluster="cluster", group="group")
    return query if within is None else query.filter(within)


def _hourly_rows(spec: ReportSpec) -> list[dict]:
    table = output_table("group_hourly", list(spec.clusters), spec.first, spec.last)
    rows = table.to_pylist() if table is not None else []
    return [{**row, "period": row["hour"]} for row in rows if _matches(row["cluster"], row["group"], spec)]


def _cluster_coverage(spec: ReportSpec) -> dict[str, float | None]:
    """Recorded polls over expected polls for each cluster across the whole range; a day with
    no statistics at all counts as expected and not recorded."""
    intervals = dict(Cluster.objects.filter(name__in=spec.clusters).values_list("name", "poll_interval"))
    days = (spec.last - spec.first).days + 1
    result: dict[str, float | None] = {}
    for cluster in spec.clusters:
        rows = list(ClusterDay.objects.filter(cluster=cluster, date__range=(spec.first, spec.last)))
        if not rows:
            result[cluster] = None
            continue
        expected = sum(r.expected_polls for r in rows) + (days - len(rows)) * (86400 // intervals.get(cluster, 15))
        result[cluster] = sum(r.polls for r in rows) / expected if expected else None
    return result
