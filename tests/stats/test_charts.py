"""Chart figures built from hand-made rows."""

from __future__ import annotations

import datetime as dt

from consumers.stats.charts import lag_figure

ROW = {"lag_p50": 1, "lag_p95": 2, "lag_max": 3, "coverage": 1.0}


def test_a_lag_chart_is_titled_by_its_periods():
    hours = [dt.datetime(2026, 1, 1, h, tzinfo=dt.UTC) for h in range(3)]
    hourly = lag_figure(hours, dict.fromkeys(hours, ROW), seconds=False)
    assert hourly["layout"]["title"]["text"].startswith("Hourly lag (messages)") and hourly["points"] == 3
    days = [dt.date(2026, 1, 1), dt.date(2026, 1, 2)]
    daily = lag_figure(days, dict.fromkeys(days, ROW), seconds=False)
    assert daily["layout"]["title"]["text"].startswith("Daily lag (messages)")
