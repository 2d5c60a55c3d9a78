"""plotly figures built from history rows; the page draws them with the vendored plotly.js."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pyarrow as pa


def lag_figure(history: pa.Table, *, group: str, hours: int) -> dict:
    """Lag in messages and seconds over time. Unknown points (None) are gaps, not zeros."""
    times = [t.isoformat() for t in history.column("ts").to_pylist()] if history.num_rows else []
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(x=times, y=history.column("lag").to_pylist() if times else [], name="lag (messages)", mode="lines")
    )
    figure.add_trace(
        go.Scatter(
            x=times,
            y=history.column("retry_lag").to_pylist() if times else [],
            name="retry lag (messages)",
            mode="lines",
            line={"dash": "dot"},
        )
    )
    figure.add_trace(
        go.Scatter(
            x=times,
            y=history.column("lag_seconds_max").to_pylist() if times else [],
            name="lag (seconds, worst queue)",
            mode="lines",
            yaxis="y2",
        )
    )
    figure.update_layout(
        title={"text": f"{group}: lag over the last {hours} h", "font": {"size": 14}},
        margin={"l": 60, "r": 60, "t": 40, "b": 40},
        height=320,
        legend={"orientation": "h", "y": -0.2},
        yaxis={"title": "messages", "rangemode": "tozero"},
        yaxis2={"title": "seconds", "overlaying": "y", "side": "right", "rangemode": "tozero"},
        xaxis={"type": "date"},
    )
    result = json.loads(figure.to_json())
    result["points"] = len(times)
    return result
