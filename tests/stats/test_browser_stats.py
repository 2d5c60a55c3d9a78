"""In headless Chromium: a week of statistics computed by the job (over synthetic history with
a slow afternoon and a missing night) drawn on the Statistics page and the group page, and a
lag report built with its progress bar and downloaded in each format."""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import subprocess
import threading
from pathlib import Path

import pytest
from django.utils import timezone
from openpyxl import load_workbook

from consumers.models import Cluster
from consumers.reports import services as report_services
from consumers.stats import job
from consumers.stats.models import GroupDay, StatsRun
from consumers.stats.runs import load_summary
from devstack.synthetic import group, publish
from devstack.synthetic_history import write_history
from tests.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
DAYS = 7
GROUP = "shop-group-0001"


@pytest.fixture
def week(spark, settings, tmp_path, redis, personas):
    settings.STATS_OUTPUT_URL = str(tmp_path / "stats")
    settings.REPORT_DIR = tmp_path / "reports"
    last = timezone.now().date() - dt.timedelta(days=1)
    first = last - dt.timedelta(days=DAYS - 1)
    write_history(tmp_path / "history", first, DAYS, cluster="shop", groups=3, queues=4, interval=60, seed=7,
                  prefix="shop-group-", slow_hours=lambda n: (14, 15, 16) if n % 2 else (15,),
                  missing_hours=lambda n: tuple(range(1, 9)) if n == 3 else ())  # fmt: skip
    cluster = Cluster.objects.create(name="shop", namesrv_addrs="127.0.0.1:9876", poll_interval=60)
    params = {"history": str(tmp_path / "history"), "output": settings.STATS_OUTPUT_URL, "first": first.isoformat(),
              "last": last.isoformat(), "as_of": timezone.now().isoformat(), "slo_overrides": [],
              "clusters": [{"cluster": "shop", "interval_seconds": 60, "slo_seconds": 300.0}]}  # fmt: skip
    summary = job.run(spark, params)
    StatsRun.objects.create(first=first, last=last, clusters=["shop"], trigger="command", master="local[2]",
                                  state="succeeded", input_rows=sum(summary["input_rows"].values()),
                                  output_rows=sum(summary["output_rows"].values()))  # fmt: skip
    load_summary(summary)
    publish(cluster, redis, [group(GROUP, lag=40)])  # the group page needs a live snapshot
    return first, last


def test_statistics_charts_and_a_downloaded_report(page, live_server, week, monkeypatch, tmp_path):
    first, last = week
    assert GroupDay.objects.filter(cluster="shop").count() == 3 * DAYS
    base = live_server.url
    period = f"since={first}&until={last}"
    log_in(page, base, landing=f"/stats/?cluster=shop&{period}")
    page.wait_for_selector("[data-charts][data-drawn=true]", timeout=30_000)
    assert int(page.get_attribute('[data-figure="breach"]', "data-points")) == DAYS
    assert "shop-group-" in page.inner_text("#top-breach_minutes")
    shots = os.environ.get("SCREENSHOT_DIR")

    page.goto(f"{base}/groups/shop/{GROUP}/?{period}")
    page.wait_for_selector("#statistics [data-charts][data-drawn=true]", timeout=30_000)
    page.wait_for_selector('#statistics [data-figure="health"] .main-svg')
    # the night without polls is named on the heat-map, the low-coverage day on the daily charts
    assert "8 of 168 hours have no polls" in page.inner_text('#statistics [data-figure="health"]')
    assert page.evaluate("window.__csp || []") == []
    if shots:
        page.locator("#statistics").screenshot(path=str(Path(shots) / "statistics.png"))

    # a report, built by a "worker" thread while the page shows its progress
    def worker(pk: int) -> None:
        threading.Thread(target=report_services.build_report, args=(pk,)).start()

    monkeypatch.setattr("consumers.reports.views.build_report.delay", worker)
    page.goto(f"{base}/reports/")
    page.check("input[name=clusters][value=shop]")
    page.fill("input[name=first]", first.isoformat())
    page.fill("input[name=last]", last.isoformat())
    page.click("#report-form button[type=submit]")
    page.wait_for_selector('#reports tr[data-state="ready"]', timeout=120_000)
    saved = {}
    for fmt in ("csv", "xlsx", "pdf"):
        with page.expect_download() as download:
            page.click(f'#reports tr[data-state="ready"] a.download:text("{fmt.upper()}")')
        saved[fmt] = tmp_path / download.value.suggested_filename
        download.value.save_as(saved[fmt])
    rows = list(csv.DictReader(io.StringIO(saved["csv"].read_text(encoding="utf-8-sig"))))
    ours = {(r["group"], r["period start (UTC)"]): r["consumed"] for r in rows}
    expected = {(g.group, g.date.isoformat()): str(g.consumed) for g in GroupDay.objects.filter(cluster="shop")}
    assert ours == expected
    assert load_workbook(saved["xlsx"]).sheetnames == ["About", "Summary", "Daily"]
    text = subprocess.run(["pdftotext", str(saved["pdf"]), "-"], capture_output=True, check=True).stdout.decode()
    assert GROUP in text
    # report now: the live snapshot's queues, downloaded from the same page
    page.goto(f"{base}/reports/")
    with page.expect_download() as download:
        page.click("#now-csv")
    now = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8-sig"))))
    assert {(r["group"], r["lag (msgs)"]) for r in now} == {(GROUP, "10")}  # lag 40 over four queues

    # the Jobs page lists the run that computed these statistics
    page.goto(f"{base}/stats/jobs/")
    row = page.locator("#runs tr[data-run]").first
    assert row.get_attribute("data-state") == "succeeded" and "local[2]" in row.inner_text()
    if shots:
        subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile", str(saved["pdf"]),
                        str(Path(shots) / "report-page")], check=True)  # fmt: skip
