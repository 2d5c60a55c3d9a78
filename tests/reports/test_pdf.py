"""The PDF's HTML page: group names come from brokers, so one that is markup stays text, in the
tables and in the chart data that a script reads (no chromium needed to check the page)."""

from __future__ import annotations

import html
import json
import re

import pytest

from consumers.reports.content import build_content
from consumers.reports.pdf import _json_safe, render_html
from consumers.stats.models import GroupDay
from tests.reports.test_reports import BASE, D1, days, same_day, spec  # noqa: F401 (days, same_day: fixtures)

EVIL = "</script><script>alert(1)</script>"


@pytest.mark.usefixtures("days")
def test_a_group_named_like_a_script_cannot_leave_the_chart_data():
    # the most SLO breach: it is among the worst groups, whose lag charts carry their names
    GroupDay.objects.create(cluster="east", date=D1, group=EVIL, **{**BASE, "consumed": 1, "breach_minutes": 999})
    page = render_html(build_content(spec()), "Lag report")
    assert EVIL not in page and "<script>alert(1)" not in page
    assert page.count("<script") == 3  # plotly.js, the figures' data and the script that draws them
    data = re.search(r'<script id="report-figures" type="application/json">(.*?)</script>', page, re.S)
    figures = json.loads(data.group(1))
    titles = [f["layout"]["title"]["text"] for f in figures]
    assert any(title.startswith(EVIL + ": ") for title in titles), titles  # the name, intact, as data
    assert html.escape(EVIL) in page  # and as text in its table


def test_chart_data_has_no_nan_for_json_parse():
    assert _json_safe({"y": [1.5, float("nan"), float("inf")], "t": ("a", -float("inf"))}) == {
        "y": [1.5, None, None],
        "t": ["a", None],
    }
    json.dumps(_json_safe([float("nan")]), allow_nan=False)  # strict JSON, as JSON.parse reads it
