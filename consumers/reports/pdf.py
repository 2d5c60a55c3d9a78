"""A report as PDF: an HTML page (title, parameters, summary table, the console's own plotly
figures, per-group tables) printed by the Debian chromium in headless mode. The charts are
drawn by the same plotly.js the pages use, from the same figure functions (stats/charts.py),
so a chart in the PDF is the chart on the screen.

It is written in the active language (services.build_report): headings, labels, chart titles,
axes and legends translated, numbers and dates formatted for the locale (the report_cell tag,
the date filter with the locale's SHORT_DATE_FORMAT), and plotly.js given the language's month
names and date orders. Chinese needs a CJK font on the worker (fonts-wqy-microhei, see
docs/deployment.md), or chromium prints boxes."""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
from pathlib import Path

import plotly
from django.conf import settings
from django.template.loader import render_to_string

from ..jobs import processes
from ..stats import charts
from .content import DETAIL_COLUMNS, SUMMARY_COLUMNS, ReportContent, granularity_text, has_statistics

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--no-pdf-header-footer",
]  # fmt: skip


class PdfError(RuntimeError):
    pass


def _totals(content: ReportContent) -> dict:
    """Per period, the sums over the report's groups (None where no group had a value)."""
    totals: dict = {p: {} for p in content.periods}
    for row in content.detail:
        for key in ("consumed", "produced", "retries", "dlq_arrivals", "breach_minutes"):
            if row.get(key) is not None:
                totals[row["period"]][key] = totals[row["period"]].get(key, 0) + row[key]
    return {p: values for p, values in totals.items() if values}


def worst_groups(content: ReportContent, limit: int) -> list[dict]:
    def badness(row):
        return (row.get("breach_minutes") or 0, row.get("lag_seconds_p95") or 0)

    return sorted(content.summary, key=badness, reverse=True)[:limit]


def _coverage(content: ReportContent) -> dict:
    """Per period, the mean coverage of the groups that have statistics (None: none has)."""
    shares: dict = {}
    for row in content.detail:
        if row.get("coverage") is not None:
            shares.setdefault(row["period"], []).append(row["coverage"])
    return {p: sum(v) / len(v) for p, v in shares.items()}


def figures(content: ReportContent, worst: list[dict]) -> list[dict]:
    periods, totals, coverage = content.periods, _totals(content), _coverage(content)
    drawn = [
        charts.flow_figure(periods, totals, coverage),
        charts.breach_figure(periods, totals, coverage),
        charts.retry_dlq_figure(periods, totals, coverage),
    ]
    by_group: dict = {}
    for row in content.detail:
        by_group.setdefault((row["cluster"], row["group"]), {})[row["period"]] = row
    for group in worst[:5]:
        found = by_group[(group["cluster"], group["group"])]
        rows = {p: r for p, r in found.items() if has_statistics(r)}
        slo = next((r.get("slo_seconds") for r in rows.values() if r.get("slo_seconds") is not None), None)
        figure = charts.lag_figure(periods, rows, seconds=True, slo=slo)
        figure["layout"]["title"]["text"] = f"{group['group']}: " + figure["layout"]["title"]["text"]
        drawn.append(figure)
    return [{"data": f["data"], "layout": {**f["layout"], "width": 1000}} for f in drawn if f.get("points")]


def _json_safe(value):
    """`value` with NaN and infinities as None: json_script would write them as NaN, which
    JSON.parse refuses (no chart at all); plotly draws None as a gap."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def render_html(content: ReportContent, title: str) -> str:
    worst = worst_groups(content, settings.REPORT_PDF_GROUP_TABLES)
    worst_keys = {(g["cluster"], g["group"]) for g in worst}
    tables: dict = {}
    for row in content.detail:
        if (row["cluster"], row["group"]) in worst_keys:
            tables.setdefault((row["cluster"], row["group"]), []).append(row)
    return render_to_string(
        "reports/pdf.html",
        {
            "title": title,
            "content": content,
            "plotly_js": PLOTLY_JS.as_uri(),
            "figures": _json_safe(figures(content, worst)),
            "summary_columns": SUMMARY_COLUMNS,
            "detail_columns": DETAIL_COLUMNS[2:],
            "summary": [[row.get(k) for k, _, _ in SUMMARY_COLUMNS] for row in content.summary],
            "group_tables": [
                (cluster, group, [[r.get(k) for k, _, _ in DETAIL_COLUMNS[2:]] for r in rows])
                for (cluster, group), rows in tables.items()
            ],
            "tables_limited": len(content.summary) > len(worst),
            "table_limit": settings.REPORT_PDF_GROUP_TABLES,
            "granularity": granularity_text(content.spec.granularity),
            # the language's plotly.js locale, as JSON in an attribute (autoescaped: data, not script)
            "plotly_locale": json.dumps(locale) if (locale := charts.plotly_locale()) else "",
        },
    )


def write_pdf(content: ReportContent, path: Path, *, title: str, owner: processes.Owner | None = None) -> None:
    """Print the report to `path`. Its HTML, chromium's profile and output sit beside it (a build
    gives each attempt a folder of its own). `owner`: the report build chromium is recorded on,
    so a take-over kills it (consumers/jobs/processes.py); it dies with the worker in any case."""
    html, log_path = path.with_suffix(".html"), path.with_suffix(".chromium.log")
    html.write_text(render_html(content, title), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory(prefix="chromium-profile-", dir=path.parent) as profile:
            command = [settings.REPORT_CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                       f"--print-to-pdf={path}", "--virtual-time-budget=30000", html.as_uri()]  # fmt: skip
            # a file, not a pipe: nobody reads while waiting, and a renderer keeping it open would hold us
            with open(log_path, "wb") as log:
                returncode = processes.run(owner, command, timeout=settings.REPORT_PDF_TIMEOUT,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        tail = log_path.read_text(errors="replace")[-2000:]
    except FileNotFoundError:
        raise PdfError(f"{settings.REPORT_CHROMIUM} not found: install chromium or set REPORT_CHROMIUM") from None
    except subprocess.TimeoutExpired:
        raise PdfError(f"chromium did not finish the PDF within {settings.REPORT_PDF_TIMEOUT} s") from None
    finally:
        html.unlink(missing_ok=True)
        log_path.unlink(missing_ok=True)
    if returncode != 0 or not path.exists() or path.stat().st_size == 0:
        raise PdfError(f"chromium could not print the PDF (exit {returncode}): {tail}")
