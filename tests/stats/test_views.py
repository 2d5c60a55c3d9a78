"""The Statistics page, the chart JSON of a cluster and of a group, the Jobs page: numbers
from day rows written here by hand, gaps shown as gaps, bad periods refused, permissions."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from consumers.models import Cluster
from consumers.stats.models import ClusterDay, GroupDay, StatsRun
from tests.support.days import keep_today

TODAY = timezone.now().date()
D1, D2, D3 = TODAY - dt.timedelta(days=2), TODAY - dt.timedelta(days=1), TODAY


@pytest.fixture(autouse=True)
def same_day(monkeypatch):
    keep_today(monkeypatch, TODAY)


def day(group: str, date: dt.date, **values) -> GroupDay:
    base = {"polls": 5760, "expected_polls": 5760, "coverage": 1.0, "consumed": 100, "produced": 120,
            "retries": 3, "dlq_arrivals": 1, "resets": 0, "incidents": 0, "lag_p50": 5, "lag_p95": 9,
            "lag_max": 12, "lag_seconds_p50": 1, "lag_seconds_p95": 4, "lag_seconds_max": 9,
            "breach_minutes": 0, "slo_seconds": 60}  # fmt: skip
    return GroupDay.objects.create(cluster="east", date=date, group=group, **{**base, **values})


@pytest.fixture
def stats(db):
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    day("orders", D1, lag_seconds_p95=30, breach_minutes=15, dlq_arrivals=7, coverage=5520 / 5760, polls=5520)
    # D2 has no row for orders: a gap
    day("orders", D3, coverage=0.5, polls=2880, lag_seconds_p95=90, breach_minutes=45)
    day("payments", D1, lag_seconds_p95=50, dlq_arrivals=0, consumed=None)
    ClusterDay.objects.create(cluster="east", date=D1, polls=5760, expected_polls=5760, coverage=1.0, groups=2)
    ClusterDay.objects.create(cluster="east", date=D3, polls=2880, expected_polls=5760, coverage=0.5, groups=1)


def trace(figure: dict, name: str) -> list:
    return next(t["y"] for t in figure["data"] if t["name"] == name)


def test_group_charts_show_the_days_and_their_gaps(viewer_client, stats):
    answer = viewer_client.get("/stats/east/orders/charts.json?days=7").json()
    figures = answer["figures"]
    seconds = figures["lag_seconds"]
    assert trace(seconds, "p95")[-3:] == [30, None, 90]  # the missing day is a gap, not 0
    # 95.8 % is named (not shaded), 50 % named and shaded
    title = seconds["layout"]["title"]["text"]
    assert f"2 days with coverage under 100 %: {D1} 95.8 %, {D3} 50.0 %; under 90 % shaded" in title
    assert [shape["type"] for shape in seconds["layout"]["shapes"]] == ["line", "rect"]  # the SLO, one shade
    assert "5 of 7 days without statistics" in seconds["layout"]["title"]["text"]
    assert trace(figures["breach"], "minutes above the lag SLO")[-3:] == [15, None, 45]
    assert trace(figures["retries_dlq"], "DLQ arrivals")[-3:] == [7, None, 1]
    assert figures["flows"]["points"] == 2
    assert figures["health"]["points"] == 0  # no hourly Parquet in this test: every hour is a gap


def test_custom_range_and_bad_periods(viewer_client, stats):
    answer = viewer_client.get(f"/stats/east/orders/charts.json?since={D1}&until={D1}").json()
    assert trace(answer["figures"]["lag_seconds"], "p95") == [30]
    for query, why in [
        (f"since={D3}&until={D1}", "before"),
        (f"since={D1}", "both"),
        ("days=12", "12"),
        ("since=yesterday&until=today", "date"),
    ]:
        response = viewer_client.get(f"/stats/east/orders/charts.json?{query}")
        assert response.status_code == 400 and why in response.json()["error"], query
    assert viewer_client.get(f"/stats/?cluster=east&since={D3}&until={D1}").status_code == 400
    assert viewer_client.get("/stats/nowhere/orders/charts.json").status_code == 404


@pytest.mark.parametrize("days", ["\u0667", "\uff17", "\u0663\u0660"])  # Arabic-Indic 7, fullwidth 7, Arabic-Indic 30
def test_a_preset_in_other_digits_is_no_preset(viewer_client, stats, days):
    response = viewer_client.get(f"/stats/east/orders/charts.json?days={days}")
    assert response.status_code == 400 and "not one of the available choices" in response.json()["error"]


@pytest.mark.parametrize(("attempt", "status"), [("1", 200), ("2", 404), ("0", 400), ("\u0661", 400), ("\uff11", 400)])
def test_a_log_attempt_is_ascii_digits(viewer_client, stats, attempt, status):
    """ "١".isdigit() is true, and int() reads it as 1: the log's ?attempt= goes by the shared rule."""
    run = StatsRun.objects.create(first=D1, last=D1, clusters=["east"], trigger="page", state="succeeded",
                                  master="local[*]", attempt=1)  # fmt: skip
    response = viewer_client.get(f"/stats/jobs/{run.pk}/log/?attempt={attempt}")
    assert response.status_code == status, response.content
    if status == 400:
        assert "attempt:" in response.content.decode()


def test_cluster_page_top_lists_and_totals(viewer_client, stats):
    html = viewer_client.get("/stats/?cluster=east&days=7").content.decode()
    top = html.split('id="top-lag_seconds_p95"')[1].split("</section>")[0]
    assert top.index("orders") < top.index("payments")  # 90 s against 50 s
    breach = html.split('id="top-breach_minutes"')[1].split("</section>")[0]
    assert "orders" in breach and "60.0" in breach and "payments" not in breach  # 15 + 45 minutes
    figures = viewer_client.get("/stats/east/charts.json?days=7").json()["figures"]
    assert trace(figures["flows"], "consumed")[-3:] == [100, None, 100]  # payments' unknown is not added as 0
    assert trace(figures["coverage"], "polls recorded (%)")[-3:] == [100.0, None, 50.0]


def test_jobs_page_shows_runs_with_their_error(viewer_client, stats):
    StatsRun.objects.create(first=D1, last=D1, clusters=["east"], trigger="nightly", state="failed",
                            master="local[*]", error_tail="<script>alert(1)</script> path does not exist")  # fmt: skip
    html = viewer_client.get("/stats/jobs/").content.decode()
    assert 'data-state="failed"' in html and "&lt;script&gt;alert(1)&lt;/script&gt; path does not exist" in html


def test_only_operators_start_runs(client, personas, stats, monkeypatch):
    queued = []
    monkeypatch.setattr("consumers.stats.views.run_statistics.delay", queued.append)
    form = {"first": D1.isoformat(), "last": D1.isoformat(), "cluster": "east"}
    client.force_login(personas["viewer"])
    assert client.post("/stats/jobs/run/", form).status_code == 403
    client.force_login(personas["operator"])
    assert client.post("/stats/jobs/run/", {**form, "last": "2001-01-01"}).status_code == 400
    assert client.post("/stats/jobs/run/", {**form, "cluster": "nowhere"}).status_code == 400
    assert not StatsRun.objects.exists() and not queued
    response = client.post("/stats/jobs/run/", form)
    assert response.status_code == 302 and queued == [StatsRun.objects.get().pk]
    refused = client.post("/stats/jobs/run/", form)  # the first still holds the day
    assert refused.status_code == 400 and b"already computing" in refused.content


def test_statistics_past_the_retention_are_pruned(stats, settings, tmp_path):
    from consumers.stats.runs import prune

    settings.STATS_OUTPUT_URL = str(tmp_path)
    settings.STATS_RETENTION_DAYS = 1  # D1 (two days ago) is past it, D3 (today) is not
    old = tmp_path / "group_daily" / "cluster=east" / f"date={D1}"
    kept = tmp_path / "group_daily" / "cluster=east" / f"date={D3}"
    old.mkdir(parents=True)
    kept.mkdir(parents=True)
    removed = prune(today=TODAY)
    assert removed["group_days"] == 2 and removed["cluster_days"] == 1 and removed["partitions"] == 1
    assert not old.exists() and kept.exists()
    assert set(GroupDay.objects.values_list("date", flat=True)) == {D3}


def test_jobs_table_refreshes_itself_while_a_run_is_active(viewer_client, stats):
    StatsRun.objects.create(first=D1, last=D1, clusters=["east"], trigger="page", state="running",
                            master="local[*]", started_at=timezone.now())  # fmt: skip
    fragment = viewer_client.get("/stats/jobs/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'hx-trigger="every 3s"' in fragment and "so far" in fragment
    StatsRun.objects.update(state="succeeded", finished_at=timezone.now())
    assert "hx-trigger" not in viewer_client.get("/stats/jobs/", HTTP_HX_REQUEST="true").content.decode()


def test_abandoned_runs_release_their_days(stats, settings):
    from consumers.stats.models import RunDay
    from consumers.stats.runs import RunRequest, release_abandoned, request_run

    settings.STATS_RUN_TIME_LIMIT = 60
    stuck = request_run(RunRequest(D1, D1, "east"), trigger="nightly")  # queued; no worker ever took it
    died = request_run(RunRequest(D2, D2, "east"), trigger="nightly")
    StatsRun.objects.filter(pk=died.pk).update(state="running", started_at=timezone.now() - dt.timedelta(hours=1))
    StatsRun.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - dt.timedelta(hours=1))
    fresh = request_run(RunRequest(D3, D3, "east"), trigger="page")
    assert sorted(release_abandoned()) == sorted([stuck.pk, died.pk])
    assert "no worker took it" in StatsRun.objects.get(pk=stuck.pk).error_tail
    assert "the worker running it stopped" in StatsRun.objects.get(pk=died.pk).error_tail
    assert list(RunDay.objects.values_list("run_id", flat=True)) == [fresh.pk]  # D1 and D2 may run again


def test_a_run_whose_worker_went_silent_says_so(viewer_client, stats, settings):
    beat = timezone.now() - dt.timedelta(seconds=settings.CHANGE_RUN_STALE_SECONDS + 30)
    StatsRun.objects.create(first=D1, last=D1, clusters=["east"], trigger="nightly", state="running",
                            master="local[*]", started_at=beat, heartbeat_at=beat)  # fmt: skip
    html = viewer_client.get("/stats/jobs/").content.decode()
    assert f"worker silent since {beat:%H:%M:%S}" in html
    StatsRun.objects.update(heartbeat_at=timezone.now())
    assert "worker silent" not in viewer_client.get("/stats/jobs/").content.decode()
