"""The drain forecast where people read it: the group page (the figure, its band and the
per-queue rates), the groups list (a column, and a sort), the API, in English and Chinese."""

from __future__ import annotations

import time

import pytest

from consumers.models import Cluster
from devstack import synthetic
from tests.support.published import group, publish

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


@pytest.fixture
def east(db, redis, history_dir, monkeypatch):
    """Three polls 15 s apart: orders drains 25 messages per queue per poll (4 queues: 100 left,
    25 a queue, 15 s each: 15 s to go); stuck's consumers take 90 a queue a poll while 100
    arrive; new has one poll only."""
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    start = time.time() - 30
    for i, (orders, stuck) in enumerate(((300, 100), (200, 140), (100, 180))):
        top = 1000 + 100 * i
        with monkeypatch.context() as patched:
            patched.setattr(synthetic.time, "time", lambda i=i: start + 15 * i)
            polled = [group("orders", lag=orders), group("stuck", lag=stuck, top=top)] + (
                [group("new", lag=9)] if i == 2 else []
            )
            publish(cluster, redis, polled)
    return cluster


def test_the_group_page_shows_the_forecast_with_its_band_and_each_queues_rates(viewer_client, east):
    html = viewer_client.get("/groups/east/orders/").content.decode()
    assert 'id="drain-forecast" data-state="DRAINING">in about 15 s (15 s – 15 s)</b>' in html
    assert 'id="drain-short" title="in about 15 s (15 s – 15 s)">15 s</b>' in html
    # per queue: 25 consumed every 15 s (1.7/s), nothing produced, 3 polls
    row = html[html.index('data-queue="T@broker-a#0"') :].split("</tr>")[0]
    assert [cell.split(">")[-1] for cell in row.split("</td>")[1:4]] == ["25", "1.7/s", "0.0/s"]
    html = viewer_client.get("/groups/east/stuck/").content.decode()
    assert 'data-state="NOT_DRAINING">not at this rate</b>' in html and ">growing</span>" in html
    html = viewer_client.get("/groups/east/new/").content.decode()
    assert 'data-state="UNKNOWN">unknown: not enough history: 1 poll(s) of 3 needed</b>' in html


def test_the_groups_list_has_the_figure_and_sorts_by_it(viewer_client, east):
    html = viewer_client.get("/groups/?sort=drain&dir=desc").content.decode()
    order = [html.index(f'data-group="{name}"') for name in ("stuck", "orders", "new")]
    assert order == sorted(order)  # not draining first, then the longest figure, unknown last
    assert 'data-drain="NOT_DRAINING" title="not at this rate">never</td>' in html
    data = viewer_client.get("/api/groups/?sort=drain&dir=desc").json()
    assert [g["group"] for g in data["groups"]] == ["stuck", "orders", "new"]
    assert data["groups"][1]["drain"] == {"state": "DRAINING", "seconds": 15.0, "low": 15.0, "high": 15.0,
                                          "trend": "shrinking", "queue": "T@broker-a#0", "reason": None,
                                          "caught_up": False}  # fmt: skip


def test_the_api_gives_each_queues_figures(viewer_client, east):
    data = viewer_client.get("/api/groups/east/orders/").json()
    assert [q["queue"] for q in data["drain_queues"]] == [f"T@broker-a#{i}" for i in range(4)]
    assert data["drain_queues"][0] == {"queue": "T@broker-a#0", "lag": 25, "consume_rate": 1.667,
                                       "produce_rate": 0.0, "seconds": 15.0, "low": 15.0, "high": 15.0, "points": 3,
                                       "judged_seconds": 30.0, "reason": None, "caught_up": False}  # fmt: skip


def test_in_chinese(viewer_client, east):
    html = viewer_client.get("/groups/east/orders/", **ZH).content.decode()
    assert "清空预测" in html and "约 15 秒 后" not in html and "in about" not in html
    assert 'data-state="DRAINING">约 15 秒后（15 秒 – 15 秒）</b>' in html
    html = viewer_client.get("/groups/east/new/", **ZH).content.decode()
    assert "未知：历史不足：需要 3 次采集，只有 1 次" in html


def test_a_group_keeping_pace_at_a_lag_of_what_is_in_flight_reads_caught_up(
    db, redis, history_dir, monkeypatch, viewer_client
):
    # 100 produced and consumed a poll (25 a queue in 15 s: 1.7/s), 2 a queue not yet committed
    cluster = Cluster.objects.create(name="west", namesrv_addrs="127.0.0.1:9876")
    start = time.time() - 30
    for i in range(3):
        with monkeypatch.context() as patched:
            patched.setattr(synthetic.time, "time", lambda i=i: start + 15 * i)
            publish(cluster, redis, [group("pace", lag=8, top=1000 + 100 * i)])
    html = viewer_client.get("/groups/west/pace/").content.decode()
    assert 'data-state="DRAINED">caught up: the lag left is in flight, and keeps pace</b>' in html
    row = html[html.index('data-queue="T@broker-a#0"') :].split("</tr>")[0]
    assert "caught up: the lag left is in flight" in row and "not at this rate" not in row
    html = viewer_client.get("/groups/west/pace/", **ZH).content.decode()
    assert 'data-state="DRAINED">已追上：剩余堆积为处理中的消息，消费跟得上生产</b>' in html
    assert viewer_client.get("/api/groups/west/pace/").json()["drain"]["caught_up"] is True


def test_the_overview_shows_the_most_behind_with_their_figures(viewer_client, east):
    html = viewer_client.get("/").content.decode()
    assert 'data-drain="DRAINING" title="in about 15 s (15 s – 15 s)">15 s</td>' in html
    assert 'data-drain="NOT_DRAINING" title="not at this rate">never</td>' in html


def test_the_reset_preview_says_when_the_lag_would_be_consumed_if_the_reset_ran_now(viewer_client, east):
    from django.template.loader import render_to_string

    from consumers.jobs.redis_client import get_redis
    from consumers.live import snapshots
    from consumers.live.forecast import after_reset

    doc = snapshots.read_detail(get_redis(), east.pk, "orders")  # 1.7/s a queue, nothing produced
    rows = [{"label": f"T@broker-a#{i}", "max": 1000, "target": 900, "topic": "T"} for i in range(4)]
    after = after_reset(rows, doc.drain_queues)
    assert after == {"state": "DRAINING", "seconds": 60.0, "queue": "T@broker-a#0", "unknown": 0}  # 100 at 5/3 a second
    plan = {"online": True, "clients": [], "read_at_ms": 0, "params": {}, "rows": [], "totals": {}}
    html = render_to_string("resets/_preview.html", {"plan": plan, "after": after})
    assert "If it ran now: the lag would be consumed in about 60 s at the rates of the last polls" in html
