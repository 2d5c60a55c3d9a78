"""plotly figures built from history rows; the page draws them with the vendored plotly.js."""

from __future__ import annotations

import datetime as dt
import json

import plotly.graph_objects as go
import pyarrow as pa
from django.utils.translation import gettext as _


def lag_figure(history: pa.Table, *, group: str, hours: int) -> dict:
    """Lag in messages and seconds over time. Unknown points (None) are gaps, not zeros."""
    times = [t.isoformat() for t in history.column("ts").to_pylist()] if history.num_rows else []
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=times, y=history.column("lag").to_pylist() if times else [], name=_("lag (messages)"), mode="lines"
        )
    )
    figure.add_trace(
        go.Scatter(
            x=times,
            y=history.column("retry_lag").to_pylist() if times else [],
            name=_("retry lag (messages)"),
            mode="lines",
            line={"dash": "dot"},
        )
    )
    figure.add_trace(
        go.Scatter(
            x=times,
            y=history.column("lag_seconds_max").to_pylist() if times else [],
            name=_("lag (seconds, worst queue)"),
            mode="lines",
            yaxis="y2",
        )
    )
    figure.update_layout(
        title={
            "text": _("%(group)s: lag over the last %(hours)s h") % {"group": group, "hours": hours},
            "font": {"size": 14},
        },
        margin={"l": 60, "r": 60, "t": 40, "b": 40},
        height=320,
        legend={"orientation": "h", "y": -0.2},
        yaxis={"title": _("messages"), "rangemode": "tozero"},
        yaxis2={"title": _("seconds"), "overlaying": "y", "side": "right", "rangemode": "tozero"},
        xaxis={"type": "date"},
    )
    result = json.loads(figure.to_json())
    result["points"] = len(times)
    return result


def allocation_figure(timeline, *, group: str, hours: int, listed: int = 50, now: dt.datetime | None = None) -> dict:
    """Each allocation change as a point (queue by time, coloured by the client that took the
    queue; hover: from whom), and the changes per hour as bars, over the window asked for (an
    axis with no point in it would otherwise start in the year 2000). A window with polls but
    no change says so in words: a note the page shows instead of an empty chart."""
    now = now or dt.datetime.now(dt.UTC)
    figure = go.Figure()
    hourly = timeline.per_hour()
    figure.add_trace(go.Bar(x=[h.isoformat() for h, _ in hourly], y=[n for _, n in hourly],
                            name=_("changes per hour"), yaxis="y2", opacity=0.35, xperiod=3600000))  # fmt: skip
    nobody = _("nobody")
    for client in [*timeline.clients, None]:
        took = [c for c in timeline.changes if c.after == client]
        if not took:
            continue
        figure.add_trace(
            go.Scatter(
                x=[c.at.isoformat() for c in took],
                y=[c.queue for c in took],
                mode="markers",
                name=client or _("released (nobody)"),
                text=[f"{c.queue}: {c.before or nobody} → {c.after or nobody}" for c in took],
                hoverinfo="text+x",
                marker={"size": 9, "symbol": "circle" if client else "x"},
            )
        )
    figure.update_layout(
        title={
            "text": _("%(group)s: queue allocation changes over the last %(hours)s h")
            % {"group": group, "hours": hours},
            "font": {"size": 14},
        },
        margin={"l": 60, "r": 60, "t": 40, "b": 40},
        height=360,
        legend={"orientation": "h", "y": -0.25},
        yaxis={"type": "category", "automargin": True},
        yaxis2={"title": _("changes per hour"), "overlaying": "y", "side": "right", "rangemode": "tozero"},
        xaxis={"type": "date", "range": [(now - dt.timedelta(hours=hours)).isoformat(), now.isoformat()]},
    )
    result = json.loads(figure.to_json())
    result["points"] = timeline.polls
    result["total"] = len(timeline.changes)
    if timeline.polls and not timeline.changes:
        result["note"] = _(
            "No queue changed hands in the last %(hours)s h: each of the %(polls)s polls read found the same "
            "allocation."
        ) % {"hours": hours, "polls": timeline.polls}
    result["changes"] = [
        {"at": c.at.isoformat(), "queue": c.queue, "from": c.before, "to": c.after}
        for c in reversed(timeline.changes[-listed:])
    ]
    return result
