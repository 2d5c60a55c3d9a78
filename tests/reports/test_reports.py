"""Lag reports over day rows written here by hand: every cell of the CSV, the XLSX's typed
cells, the PDF's text and pages, refusals that create nothing, audit and permissions."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import subprocess
import threading
import time

import pytest
from django.core import mail
from django.utils import timezone
from openpyxl import load_workbook

from consumers.audit.models import AuditEvent
from consumers.models import Cluster
from consumers.reports import services
from consumers.reports.content import ReportSpec
from consumers.reports.models import Report
from consumers.stats.models import ClusterDay, GroupDay
from tests.support.days import keep_today

pytestmark = pytest.mark.django_db(transaction=True)
TODAY = timezone.now().date()
D1, D2, D3 = (TODAY - dt.timedelta(days=n) for n in (3, 2, 1))
BASE = {"polls": 1440, "expected_polls": 1440, "coverage": 1.0, "produced": 120, "retries": 0, "dlq_arrivals": 0,
        "resets": 0, "incidents": 0, "lag_p50": 5, "lag_p95": 9, "lag_max": 12, "lag_seconds_p50": 1,
        "lag_seconds_p95": 4, "lag_seconds_max": 9, "breach_minutes": 0, "slo_seconds": 60}  # fmt: skip


@pytest.fixture(autouse=True)
def same_day(monkeypatch):
    keep_today(monkeypatch, TODAY)


@pytest.fixture
def days(db, settings, tmp_path):
    settings.REPORT_DIR = tmp_path / "reports"
    settings.STATS_OUTPUT_URL = str(tmp_path / "no-parquet")
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876", poll_interval=60)
    rows = [
        ("orders", D1, {"consumed": 100, "lag_seconds_p95": 30.5, "breach_minutes": 15, "dlq_arrivals": 2}),
        # D2: no statistics for orders (a gap)
        (
            "orders",
            D3,
            {
                "consumed": 300,
                "polls": 720,
                "coverage": 0.5,
                "lag_seconds_p95": 90.25,
                "breach_minutes": 45,
                "incidents": 1,
            },
        ),  # fmt: skip
        ("payments", D1, {"consumed": None, "lag_max": 7}),  # its offsets were unknown all day
        ("payments", D2, {"consumed": 50, "polls": 1380, "coverage": 1380 / 1440}),
        ("payments", D3, {"consumed": 60, "retries": 4}),
    ]
    for group, date, values in rows:
        GroupDay.objects.create(cluster="east", date=date, group=group, **{**BASE, **values})
    for date, polls in ((D1, 1440), (D2, 1440), (D3, 720)):
        ClusterDay.objects.create(cluster="east", date=date, polls=polls, expected_polls=1440,
                                  coverage=polls / 1440, groups=2)  # fmt: skip


def spec(**changes) -> ReportSpec:
    return ReportSpec(**{"clusters": ("east",), "first": D1, "last": D3, **changes})


def built(formats=("csv", "xlsx", "pdf"), **changes) -> Report:
    report = services.build_report(services.request_report(spec(**changes), list(formats)).pk)
    assert report.state == Report.State.READY, report.error
    return report


def read(report: Report, fmt: str) -> bytes:
    return (services.report_dir(report) / report.files[fmt]).read_bytes()


def test_csv_cells_worked_by_hand(days):
    report = built(("csv",))
    rows = list(csv.DictReader(io.StringIO(read(report, "csv").decode("utf-8-sig"))))
    cells = [(r["group"], r["period start (UTC)"], r["status"], r["consumed"], r["lag p95 (s)"]) for r in rows]
    assert cells == [
        ("orders", D1.isoformat(), "ok", "100", "30.5"),
        ("orders", D2.isoformat(), "no statistics", "", ""),  # a gap, not zeros
        ("orders", D3.isoformat(), "low coverage (50%)", "300", "90.25"),
        ("payments", D1.isoformat(), "ok", "", "4.0"),  # unknown consumption stays unknown
        ("payments", D2.isoformat(), "partial coverage (95.8 %)", "50", "4.0"),
        ("payments", D3.isoformat(), "ok", "60", "4.0"),
    ]
    assert {r["source"] for r in rows} == {"nightly statistics, daily rows (database)"}
    assert report.files["csv"] == f"lag-report-east-{D1}-{D3}-daily-UTC.csv"
    assert (report.groups, report.rows) == (2, 6)
    assert report.coverage == pytest.approx((1440 + 1440 + 720) / (3 * 1440))


def test_csv_equals_the_group_page_charts(days, viewer_client):
    report = built(("csv",))
    rows = [r for r in csv.DictReader(io.StringIO(read(report, "csv").decode("utf-8-sig"))) if r["group"] == "orders"]
    figure = viewer_client.get(f"/stats/east/orders/charts.json?since={D1}&until={D3}").json()["figures"]
    p95 = next(t["y"] for t in figure["lag_seconds"]["data"] if t["name"] == "p95")
    assert [float(r["lag p95 (s)"]) if r["lag p95 (s)"] else None for r in rows] == p95


def test_xlsx_typed_cells_and_summary(days):
    report = built(("xlsx",))
    book = load_workbook(io.BytesIO(read(report, "xlsx")))
    assert book.sheetnames == ["About", "Summary", "Daily"]
    summary = book["Summary"]
    assert summary.freeze_panes == "C2"
    header = [c.value for c in summary[1]]
    orders = dict(zip(header, [c.value for c in summary[2]], strict=True))
    # orders: two days with statistics, one without; 1,440 + 720 polls of 3 x 1,440 expected
    assert orders["periods with statistics"] == 2 and orders["periods without"] == 1
    assert orders["coverage"] == pytest.approx(2160 / 4320)
    assert (orders["consumed"], orders["SLO breach (min)"], orders["worst p95 lag (s)"]) == (400, 60, 90.25)
    assert (orders["DLQ arrivals"], orders["incidents"]) == (2, 1)
    payments = dict(zip(header, [c.value for c in summary[3]], strict=True))
    assert (payments["consumed"], payments["retries"], payments["max lag (msgs)"]) == (110, 4, 12)
    daily = book["Daily"]
    first = daily[2]
    assert isinstance(first[2].value, dt.datetime) and first[2].value.date() == D1
    assert first[2].number_format == "yyyy-mm-dd"
    assert isinstance(first[5].value, int) and first[5].number_format == "#,##0"
    gap = daily[3]
    assert gap[3].value == "no statistics" and gap[5].value is None
    about = {row[0].value: row[1].value for row in book["About"].iter_rows()}
    assert about["time zone"] == "UTC" and about["source"].startswith("nightly statistics")
    assert about["coverage east"] == pytest.approx(3600 / 4320)


def test_pdf_renders_with_the_group_names_and_charts(days, tmp_path):
    long_names = ["checkout-payment-settlement-reconciliation-consumer-eu-west-1",
                  "order-events-to-search-index-projection-v2", "a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p"]  # fmt: skip
    for name in long_names:
        GroupDay.objects.create(cluster="east", date=D1, group=name, **{**BASE, "consumed": 1})
    report = built(("pdf",))
    pdf = services.report_dir(report) / report.files["pdf"]
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, check=True).stdout.decode()
    assert "orders" in text and "payments" in text and "Time zone" in text and "no statistics" in text
    assert all(name in text for name in long_names)  # never broken at a hyphen
    assert "Messages consumed vs produced per day" in text  # a plotly chart's title, drawn as SVG text
    subprocess.run(["pdftoppm", "-png", "-r", "40", str(pdf), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page*.png"))
    assert pages and all(p.stat().st_size > 2000 for p in pages)


@pytest.mark.parametrize(
    "changes, why",
    [
        ({"last": D1 - dt.timedelta(days=1)}, "before it starts"),
        ({"clusters": ("east", "west")}, "unknown cluster west"),
        ({"first": TODAY - dt.timedelta(days=500)}, "past the statistics retention"),
        ({"first": TODAY - dt.timedelta(days=30), "last": TODAY - dt.timedelta(days=20)}, "the range is empty"),
        ({"group_filter": "nothing-like-this"}, "the range is empty"),
        ({"first": TODAY + dt.timedelta(days=1), "last": TODAY + dt.timedelta(days=2)}, "in the future"),
        ({"granularity": "hourly", "first": TODAY - dt.timedelta(days=40)}, "at most 31 days"),
        ({"last": TODAY + dt.timedelta(days=1)}, f"{TODAY + dt.timedelta(days=1)} is after today \\({TODAY}, UTC\\)"),
        ({"last": dt.date(9999, 12, 31)}, "9999-12-31 is after today"),  # held a worker 914 s, 7.8 GB
        # TODAY - 100 to TODAY - 1: 100 days
        (
            {"first": TODAY - dt.timedelta(days=100), "last": TODAY - dt.timedelta(days=1)},
            f"at most 92 days; {TODAY - dt.timedelta(days=100)} to {TODAY - dt.timedelta(days=1)} is 100",
        ),
    ],
)
def test_bad_parameters_create_nothing(days, changes, why):
    with pytest.raises(services.ReportRefused, match=why):
        services.request_report(spec(**changes), ["csv"])
    assert not Report.objects.exists()


@pytest.mark.parametrize(
    ("limit", "changes", "says"),
    [
        # orders and payments over D1..D3: 2 groups x 3 days
        (5, {}, "would hold 6 rows (2 groups × 3 days), more than the 5 a report may hold"),
        # hourly: 2 groups x 3 days x 24 hours
        (143, {"granularity": "hourly"}, "would hold 144 rows (2 groups × 72 hours), more than the 143"),
    ],
)
def test_a_report_larger_than_the_limit_is_refused_with_its_figure(days, settings, limit, changes, says):
    settings.REPORT_MAX_ROWS = limit
    with pytest.raises(services.ReportRefused, match=re.escape(says)):
        services.request_report(spec(**changes), ["csv"])
    assert not Report.objects.exists()
    settings.REPORT_MAX_ROWS = limit + 1  # exactly the estimate: made
    services.request_report(spec(**changes), ["csv"])
    settings.REPORT_MAX_ROWS = 3  # orders alone: 1 group x 3 days
    services.request_report(spec(group_filter="ord"), ["csv"])


def test_the_estimate_is_the_rows_the_builder_writes(days, settings):
    GroupDay.objects.bulk_create([GroupDay(cluster="east", date=D1, group=f"g-{n:04d}", **BASE) for n in range(1000)])
    assert services.estimated_rows(spec(granularity="hourly")) == (1002, 1002 * 72)
    settings.REPORT_MAX_ROWS = 50_000
    with pytest.raises(services.ReportRefused, match="72,144 rows \\(1,002 groups × 72 hours\\), more than the 50,000"):
        services.request_report(spec(granularity="hourly"), ["csv"])
    report = built(("csv",), group_filter="g-000")  # g-0000 .. g-0009, over D1..D3
    assert services.estimated_rows(spec(group_filter="g-000")) == (10, 30) == (report.groups, report.rows)


def test_the_page_refuses_a_range_past_today_and_makes_nothing(days, viewer_client, monkeypatch):
    monkeypatch.setattr("consumers.reports.views.build_report.delay", lambda pk: None)
    form = {"clusters": ["east"], "first": D1, "last": "9999-12-31", "granularity": "daily", "formats": ["csv"]}
    refused = viewer_client.post("/reports/new/", form)
    assert refused.status_code == 400 and "9999-12-31 is after today" in refused.content.decode()
    assert viewer_client.post("/reports/new/", {**form, "last": "\u0662\u0660\u0662\u0666-01-01"}).status_code == 400
    assert not Report.objects.exists()


def test_every_role_makes_and_downloads_and_each_download_is_audited(days, client, personas, monkeypatch):
    queued = []
    monkeypatch.setattr("consumers.reports.views.build_report.delay", queued.append)
    client.force_login(personas["viewer"])
    form = {"clusters": ["east"], "first": D1, "last": D3, "granularity": "daily", "formats": ["csv", "xlsx"]}
    assert client.post("/reports/new/", {**form, "clusters": ["west"]}).status_code == 400
    assert client.post("/reports/new/", {**form, "last": D1 - dt.timedelta(days=1)}).status_code == 400
    assert not Report.objects.exists()
    assert client.post("/reports/new/", form).status_code == 302
    report = services.build_report(queued[0])
    assert b'data-state="ready"' in client.get(f"/reports/{report.pk}/row/").content
    response = client.get(f"/reports/{report.pk}/download.xlsx")
    assert response.status_code == 200 and f"{report.files['xlsx']}" in response["Content-Disposition"]
    assert b"".join(response.streaming_content)[:2] == b"PK"
    assert client.get(f"/reports/{report.pk}/download.pdf").status_code == 404  # not asked for
    event = AuditEvent.objects.filter(action="report-download").get()
    assert (event.username, event.details["format"], event.details["report"]) == ("viewer", "xlsx", report.pk)
    client.logout()
    assert client.get(f"/reports/{report.pk}/download.xlsx").status_code == 302  # to the login page


def test_weekly_report_is_queued_built_audited_and_mailed(days, settings, monkeypatch,
                                                          django_capture_on_commit_callbacks):  # fmt: skip
    """The scheduler only enqueues: each report is built (and mailed) by its own build task,
    under REPORT_BUILD_TIME_LIMIT, not inside the scheduling task's global limit."""
    settings.REPORT_EMAIL_TO = ["leads@example.com"]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    Cluster.objects.create(name="quiet", namesrv_addrs="127.0.0.1:9876")  # no statistics: skipped, audited
    built = []
    with django_capture_on_commit_callbacks(execute=True):
        queued = services.weekly_reports(enqueue=built.append, today=TODAY)
    assert [r.state for r in queued] == ["queued"] and built == [queued[0].pk] and not mail.outbox
    made = [services.build_report(pk) for pk in built]  # what the worker does
    assert [(r.clusters, r.first, r.last, r.state) for r in made] == [(["east"], TODAY - dt.timedelta(days=7),
                                                                        D3, "ready")]  # fmt: skip
    events = {e.cluster: e.details for e in AuditEvent.objects.filter(action="report-scheduled")}
    assert events["east"]["report"] == made[0].pk and "range is empty" in events["quiet"]["refused"]
    assert len(mail.outbox) == 1 and {name for name, _, _ in mail.outbox[0].attachments} == {
        made[0].files["pdf"],
        made[0].files["xlsx"],
    }


def test_a_thousand_groups_over_thirty_days_with_progress(db, settings, tmp_path):
    settings.REPORT_DIR = tmp_path / "reports"
    Cluster.objects.create(name="big", namesrv_addrs="127.0.0.1:9876")
    first = TODAY - dt.timedelta(days=30)
    GroupDay.objects.bulk_create(
        [GroupDay(cluster="big", date=first + dt.timedelta(days=d), group=f"group-{g:04d}", **{**BASE, "consumed": g})
         for g in range(1000) for d in range(30)], batch_size=5000)  # fmt: skip
    report = services.request_report(ReportSpec(("big",), first, TODAY - dt.timedelta(days=1)), ["csv", "xlsx"])
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set():
            seen.append(Report.objects.get(pk=report.pk).progress)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    from consumers.reports.tasks import build_report

    build_report(report.pk)  # the Celery task's body, as a worker runs it
    done.set()
    watcher.join()
    report.refresh_from_db()
    assert report.state == "ready" and report.progress == 100 and (report.groups, report.rows) == (1000, 30_000)
    assert seen == sorted(seen) and len(set(seen)) > 2
    rows = list(csv.reader(io.StringIO(read(report, "csv").decode("utf-8-sig"))))
    assert len(rows) == 30_001 and rows[-1][1] == "group-0999" and rows[-1][5] == "999"
    daily = load_workbook(io.BytesIO(read(report, "xlsx")), read_only=True)["Daily"]
    assert sum(1 for _ in daily.iter_rows(values_only=True)) == 30_001


def test_report_now_from_the_live_snapshot(days, viewer_client, redis):
    from devstack.synthetic import group, publish

    publish(Cluster.objects.get(name="east"), redis, [group("orders", lag=6), group("payments", lag=0)])
    response = viewer_client.get("/reports/now.csv?cluster=east&group_filter=ord")
    assert response.status_code == 200 and "lag-now-east-" in response["Content-Disposition"]
    body = b"".join(response.streaming_content).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(body)))
    # lag 6 over four queues of max offset 100: 2, 2, 1, 1 (devstack.synthetic.group)
    assert [(r["group"], r["queue"], r["consumer offset"], r["lag (msgs)"], r["status"]) for r in rows] == [
        ("orders", "0", "98", "2", "ok"), ("orders", "1", "98", "2", "ok"),
        ("orders", "2", "99", "1", "ok"), ("orders", "3", "99", "1", "ok"),
    ]  # fmt: skip
    assert "c1" not in body and "127.0.0.1" not in body  # no client ids or addresses
    sheet = load_workbook(io.BytesIO(viewer_client.get("/reports/now.xlsx?cluster=east").content))["Lag now"]
    values = [[c.value for c in row] for row in sheet.iter_rows(min_row=2)]
    assert sorted((v[1], v[4], v[8]) for v in values) == [("orders", 0, 2), ("orders", 1, 2), ("orders", 2, 1),
                                                           ("orders", 3, 1), ("payments", 0, 0), ("payments", 1, 0),
                                                           ("payments", 2, 0), ("payments", 3, 0)]  # fmt: skip
    assert isinstance(values[0][11], dt.datetime) and sheet.freeze_panes == "C2"
    assert AuditEvent.objects.filter(action="report-download", details__report="now").count() == 2
    assert viewer_client.get("/reports/now.pdf").status_code == 400
    assert viewer_client.get("/reports/now.csv?cluster=west").status_code == 400


def test_report_now_gives_each_queues_forecast_tag_lag_and_retention_loss(days, viewer_client, redis):
    from consumers.live import snapshots
    from devstack.synthetic import group, publish

    east = Cluster.objects.get(name="east")
    docs = publish(east, redis, [group("orders", lag=6), group("payments", lag=0)])
    orders = docs["orders"]
    labels = [q.label for q in orders.queues]
    orders.queues[0].tag_lag, orders.queues[1].tag_lag = 1, 0  # say the group filters by tags
    orders.drain_queues = [{"queue": labels[0], "seconds": 30.0}, {"queue": labels[1], "seconds": None}]
    orders.retention = {"state": "AT_RISK", "queues": [{"queue": labels[2], "lost": 1, "in_seconds": 600}]}
    snapshots.write_poll(redis, east.pk, meta=snapshots.read_meta(redis, east.pk), documents=docs, samples={},
                         polled_at=orders.as_of)  # fmt: skip
    body = b"".join(viewer_client.get("/reports/now.csv?cluster=east").streaming_content).decode("utf-8-sig")
    rows = [(r["group"], r["queue"], r["lag (msgs)"], r["lag for its tags (msgs)"], r["drains in (s)"],
             r["lost to retention (msgs)"]) for r in csv.DictReader(io.StringIO(body))]  # fmt: skip
    # an unknown figure is empty, never 0: no forecast for queue 1 and 3; payments was not judged
    # for retention (no retention figure), but has no lag to lose or drain
    assert rows == [
        ("orders", "0", "2", "1", "30.0", "0"), ("orders", "1", "2", "0", "", "0"),
        ("orders", "2", "1", "", "", "1"), ("orders", "3", "1", "", "", "0"),
        ("payments", "0", "0", "", "0.0", "0"), ("payments", "1", "0", "", "0.0", "0"),
        ("payments", "2", "0", "", "0.0", "0"), ("payments", "3", "0", "", "0.0", "0"),
    ]  # fmt: skip
