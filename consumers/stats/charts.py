"""plotly figures of the statistics, as JSON for the vendored plotly.js (and, later, for the
PDF reports: the same functions draw both). Missing days are gaps (None), never zeros, and
each figure names the missing days and every day with coverage under 100 %, and shades those
under LOW_COVERAGE."""

from __future__ import annotations

import datetime as dt
import json

import plotly.graph_objects as go
from django.utils import translation
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..live.health import SEVERITY
from .selectors import LOW_COVERAGE, coverage_gaps, coverage_text

HEIGHT = 300
NAMED_PERIODS = 5  # partial days named in a chart's subtitle; the rest are counted
# worst first, as in live/health.py; the heat-map colours a cell by its worst state
STATE_COLOURS = {
    "UNKNOWN": "#9e9e9e",
    "OFFSET_EXPIRED": "#6a1b9a",
    "PAUSED": "#455a64",
    "STALLED": "#b71c1c",
    "STOPPED": "#e53935",
    "RETENTION_RISK": "#ad1457",
    "DLQ_GROWING": "#ef6c00",
    "RETRY_STORM": "#f9a825",
    "REBALANCE_STORM": "#ffb300",
    "FALLING_BEHIND": "#fdd835",
    "CATCHING_UP": "#9ccc65",
    "IDLE": "#90caf9",
    "OK": "#2e7d32",
}


# plotly.js writes the dates of an axis in English ("Nov 23"); another language registers its own
# month names and date orders (a plotly.js locale: moduleType "locale", its "format" as d3's)
PLOTLY_LOCALES = {
    "zh-hans": {
        "moduleType": "locale",
        "name": "zh-CN",
        # the mode bar's tooltips and messages, keyed by plotly.js's own English texts
        "dictionary": {
            "Autoscale": "自动缩放",
            "Box Select": "矩形选择",
            "Lasso Select": "套索选择",
            "Pan": "平移",
            "Zoom": "缩放",
            "Zoom in": "放大",
            "Zoom out": "缩小",
            "Reset axes": "重置坐标轴",
            "Reset": "重置",
            "Download plot as a png": "下载图表（PNG）",
            "Download plot as a PNG": "下载图表（PNG）",
            "Share chart...": "分享图表…",
            "Download plot": "下载图表",
            "Show closest data on hover": "悬停时显示最近的数据",
            "Compare data on hover": "悬停时比较数据",
            "Toggle Spike Lines": "切换辅助线",
            "Toggle show closest data on hover": "切换悬停时显示最近的数据",
            "Double-click to zoom back out": "双击还原",
            "Taking snapshot - this may take a few seconds": "正在生成快照，请稍候",
            "Snapshot succeeded": "快照已生成",
            "Sorry, there was a problem downloading your snapshot!": "抱歉，快照下载失败！",
            "Click to enter Plot title": "点击输入图表标题",
            "Click to enter X axis title": "点击输入 X 轴标题",
            "Click to enter Y axis title": "点击输入 Y 轴标题",
            "Produced with Plotly.js": "由 Plotly.js 绘制",
        },
        "format": {
            "days": ["星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"],
            "shortDays": ["周日", "周一", "周二", "周三", "周四", "周五", "周六"],
            "months": [f"{m}月" for m in range(1, 13)],
            "shortMonths": [f"{m}月" for m in range(1, 13)],
            "date": "%Y-%m-%d",
            "year": "%Y年",
            "month": "%Y年%-m月",
            "dayMonth": "%-m月%-d日",
            "dayMonthYear": "%Y年%-m月%-d日",
        },
    },
}


def plotly_locale() -> dict | None:
    """The plotly.js locale of the active language (None: plotly's own English)."""
    return PLOTLY_LOCALES.get(translation.get_language())


def _dates(days: list) -> list[str]:
    return [d.isoformat() for d in days]


def _value(row, name: str):
    if row is None:
        return None
    return row.get(name) if isinstance(row, dict) else getattr(row, name)


def _layout(figure: go.Figure, title: str, notes: list[str], *, y_title: str, y2_title: str | None = None):
    text = title if not notes else f"{title}<br><sup>{'; '.join(notes)}</sup>"
    figure.update_layout(
        title={"text": text, "font": {"size": 14}},
        height=HEIGHT,
        margin={"l": 60, "r": 60 if y2_title else 20, "t": 60 if notes else 40, "b": 40},
        legend={"orientation": "h", "y": -0.25},
        yaxis={"title": y_title, "rangemode": "tozero"},
        xaxis={"type": "date"},
        barmode="group",
    )
    if y2_title:
        figure.update_layout(yaxis2={"title": y2_title, "overlaying": "y", "side": "right", "rangemode": "tozero"})


def _notes_and_shading(figure: go.Figure, days: list[dt.date], coverage: dict) -> list[str]:
    missing, partial = coverage_gaps(days, coverage)
    for period in (p for p in partial if coverage[p] < LOW_COVERAGE):
        # a point (or bar) stands at the start of its period, so the shade is centred on it;
        # daily charts have dates, hourly ones (the reports') datetimes
        hourly = isinstance(period, dt.datetime)
        middle = period if hourly else dt.datetime.combine(period, dt.time())
        half = dt.timedelta(minutes=30) if hourly else dt.timedelta(hours=12)
        figure.add_vrect(x0=middle - half, x1=middle + half, fillcolor="#bdbdbd", opacity=0.3, line_width=0)
    notes = []
    hourly = bool(days) and isinstance(days[0], dt.datetime)
    if missing:
        counts = {"missing": len(missing), "periods": len(days)}
        if hourly:
            notes.append(_("%(missing)s of %(periods)s hours without statistics") % counts)
        else:
            notes.append(_("%(missing)s of %(periods)s days without statistics") % counts)
    if partial:
        named = ", ".join(f"{_label(p)} {coverage_text(coverage[p])}" for p in partial[:NAMED_PERIODS])
        if len(partial) > NAMED_PERIODS:
            named += _(" and %(more)s more") % {"more": len(partial) - NAMED_PERIODS}
        if any(coverage[p] < LOW_COVERAGE for p in partial):
            named += _("; under %(low)s %% shaded") % {"low": f"{LOW_COVERAGE * 100:.0f}"}
        if hourly:
            text = ngettext("%(count)s hour with coverage under 100 %%: %(named)s",
                            "%(count)s hours with coverage under 100 %%: %(named)s", len(partial))  # fmt: skip
        else:
            text = ngettext("%(count)s day with coverage under 100 %%: %(named)s",
                            "%(count)s days with coverage under 100 %%: %(named)s", len(partial))  # fmt: skip
        notes.append(text % {"count": len(partial), "named": named})
    return notes


def _label(period) -> str:
    if isinstance(period, dt.datetime):
        return period.strftime("%m-%d %H:00")
    return date_format(period, "SHORT_DATE_FORMAT")  # the language's (English: ISO 8601)


def _as_json(figure: go.Figure, days: list[dt.date], rows: dict) -> dict:
    result = json.loads(figure.to_json())
    result["points"] = sum(1 for d in days if rows.get(d) is not None)
    return result


def lag_figure(days: list[dt.date], rows: dict, *, seconds: bool, slo: float | None = None) -> dict:
    prefix, unit = ("lag_seconds", _("seconds")) if seconds else ("lag", _("messages"))
    figure = go.Figure()
    # p50 and p95 are names in every language; "max" is a word
    for name, label, dash in (("p50", "p50", "dot"), ("p95", "p95", "solid"), ("max", _("max"), "dash")):
        values = [_value(rows.get(d), f"{prefix}_{name}") for d in days]
        figure.add_trace(go.Scatter(x=_dates(days), y=values, name=label, mode="lines+markers", line={"dash": dash}))
    if seconds and slo is not None:
        slo_text = _("SLO %(seconds)s s") % {"seconds": f"{slo:g}"}
        figure.add_hline(y=slo, line_dash="dot", line_color="#b71c1c", annotation_text=slo_text)
    notes = _notes_and_shading(figure, days, {d: _value(rows.get(d), "coverage") for d in days})
    if days and isinstance(days[0], dt.datetime):  # an hourly report's
        title = _("Hourly lag (%(unit)s): p50, p95, max") % {"unit": unit}
    else:
        title = _("Daily lag (%(unit)s): p50, p95, max") % {"unit": unit}
    _layout(figure, title, notes, y_title=unit)
    return _as_json(figure, days, rows)


def flow_figure(days: list[dt.date], rows: dict, coverage: dict | None = None) -> dict:
    figure = go.Figure()
    for name, label in (("produced", _("produced")), ("consumed", _("consumed"))):
        figure.add_trace(go.Bar(x=_dates(days), y=[_value(rows.get(d), name) for d in days], name=label))
    notes = _notes_and_shading(figure, days, coverage or {d: _value(rows.get(d), "coverage") for d in days})
    _layout(figure, _("Messages consumed vs produced per day"), notes, y_title=_("messages"))
    return _as_json(figure, days, rows)


def retry_dlq_figure(days: list[dt.date], rows: dict, coverage: dict | None = None) -> dict:
    figure = go.Figure()
    figure.add_trace(go.Bar(x=_dates(days), y=[_value(rows.get(d), "retries") for d in days], name=_("retries")))
    figure.add_trace(
        go.Bar(x=_dates(days), y=[_value(rows.get(d), "dlq_arrivals") for d in days], name=_("DLQ arrivals"))
    )
    notes = _notes_and_shading(figure, days, coverage or {d: _value(rows.get(d), "coverage") for d in days})
    _layout(figure, _("Retries and dead letters per day"), notes, y_title=_("messages"))
    return _as_json(figure, days, rows)


def breach_figure(days: list[dt.date], rows: dict, coverage: dict | None = None) -> dict:
    figure = go.Figure()
    values = [_value(rows.get(d), "breach_minutes") for d in days]
    figure.add_trace(go.Bar(x=_dates(days), y=values, name=_("minutes above the lag SLO"), marker_color="#e53935"))
    notes = _notes_and_shading(figure, days, coverage or {d: _value(rows.get(d), "coverage") for d in days})
    _layout(figure, _("SLO breach: minutes with lag above the SLO"), notes, y_title=_("minutes"))
    return _as_json(figure, days, rows)


def coverage_figure(days: list[dt.date], rows: dict) -> dict:
    figure = go.Figure()
    values = [None if rows.get(d) is None else round(100 * rows[d].coverage, 1) for d in days]
    figure.add_trace(go.Bar(x=_dates(days), y=values, name=_("polls recorded (%)"), marker_color="#1565c0"))
    notes = _notes_and_shading(figure, days, {d: _value(rows.get(d), "coverage") for d in days})
    _layout(figure, _("Coverage: share of the expected polls that were recorded"), notes, y_title="%")
    figure.update_yaxes(range=[0, 100])
    return _as_json(figure, days, rows)


def health_heatmap(days: list[dt.date], cells: dict) -> dict:
    """Hours (rows) by days (columns), each cell coloured by the worst state seen that hour;
    the hover lists the minutes in every state. Empty cells: no poll recorded."""
    order = {state: index for index, state in enumerate(SEVERITY)}
    z, text = [], []
    for hour in range(24):
        z_row, text_row = [], []
        for day in days:
            states = cells.get((day, hour))
            if not states:
                z_row.append(None)
                text_row.append(_("no polls recorded"))
                continue
            worst = min(states, key=lambda s: order.get(s, 0))
            z_row.append(order.get(worst, 0))
            by_severity = sorted(states.items(), key=lambda item: order.get(item[0], 0))
            text_row.append("<br>".join(f"{state}: {minutes:g} min" for state, minutes in by_severity))
        z.append(z_row)
        text.append(text_row)
    steps = len(SEVERITY) - 1
    colourscale = []
    for index, state in enumerate(SEVERITY):
        colourscale += [[max(0, index - 0.5) / steps, STATE_COLOURS[state]], [min(steps, index + 0.5) / steps,
                                                                               STATE_COLOURS[state]]]  # fmt: skip
    figure = go.Figure(
        go.Heatmap(
            x=_dates(days), y=list(range(24)), z=z, text=text, hoverinfo="x+y+text", zmin=0, zmax=steps,
            colorscale=colourscale, showscale=True,
            colorbar={"tickvals": list(range(len(SEVERITY))), "ticktext": list(SEVERITY), "len": 1},
        )
    )  # fmt: skip
    hours = sum(1 for v in cells.values() if v)
    missing = {"missing": len(days) * 24 - hours, "hours": len(days) * 24}
    notes = [] if hours == len(days) * 24 else [_("%(missing)s of %(hours)s hours have no polls") % missing]
    _layout(figure, _("Health by hour (worst state in the hour)"), notes, y_title=_("hour (UTC)"))
    figure.update_layout(height=420, yaxis={"autorange": "reversed", "dtick": 3})
    result = json.loads(figure.to_json())
    result["points"] = hours
    return result


def group_figures(days: list[dt.date], rows: dict, cells: dict, slo: float | None) -> dict[str, dict]:
    return {
        "lag_messages": lag_figure(days, rows, seconds=False),
        "lag_seconds": lag_figure(days, rows, seconds=True, slo=slo),
        "flows": flow_figure(days, rows),
        "retries_dlq": retry_dlq_figure(days, rows),
        "breach": breach_figure(days, rows),
        "health": health_heatmap(days, cells),
    }


def cluster_figures(days: list[dt.date], cluster_rows: dict, totals: dict) -> dict[str, dict]:
    coverage = {d: _value(cluster_rows.get(d), "coverage") for d in days}
    return {
        "coverage": coverage_figure(days, cluster_rows),
        "flows": flow_figure(days, totals, coverage),
        "retries_dlq": retry_dlq_figure(days, totals, coverage),
        "breach": breach_figure(days, totals, coverage),
    }
