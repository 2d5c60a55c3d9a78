""" "Report now": the current lag of every queue from the live snapshot in Redis, as CSV or
XLSX. No client addresses (reports go to people outside operations); a queue we could not read
says why in its status, with empty numbers rather than zeros."""

from __future__ import annotations

import datetime as dt
from io import BytesIO

from openpyxl import Workbook

from ..csvstream import csv_writer
from ..identity import EVERYTHING, Scope
from ..live import snapshots
from ..models import Cluster
from .csvfile import cell
from .xlsx import write_sheet

COLUMNS = [
    ("cluster", "cluster", "text"), ("group", "group", "text"), ("topic", "topic", "text"),
    ("broker", "broker", "text"), ("queue_id", "queue", "int"), ("retry", "retry topic", "bool"),
    ("max", "broker offset", "int"), ("consumer", "consumer offset", "int"), ("lag", "lag (msgs)", "int"),
    ("lag_seconds", "lag (s)", "float"), ("last_consumed", "last consumed (UTC)", "datetime"),
    ("as_of", "read at (UTC)", "datetime"), ("status", "status", "text"),
]  # fmt: skip


def _utc(epoch_seconds: float | None) -> dt.datetime | None:
    return None if epoch_seconds is None else dt.datetime.fromtimestamp(epoch_seconds, dt.UTC)


def live_rows(redis, clusters: list[Cluster], group_filter: str = "", scope: Scope = EVERYTHING) -> list[dict]:
    rows = []
    for cluster in clusters:
        for name, doc in sorted(snapshots.read_details(redis, cluster.pk).items()):
            if group_filter.lower() not in name.lower() or not scope.sees_group(cluster.name, name):
                continue
            for queue in doc.queues:
                status = queue.stale_reason or doc.stale_reason or ("ok" if queue.lag is not None else "unknown")
                rows.append(
                    {
                        "cluster": cluster.name, "group": name, "topic": queue.topic, "broker": queue.broker,
                        "queue_id": queue.queue_id, "retry": queue.retry, "max": queue.max,
                        "consumer": queue.consumer, "lag": queue.lag, "lag_seconds": queue.lag_seconds,
                        "last_consumed": _utc(queue.last_consume_ms / 1000) if queue.last_consume_ms else None,
                        "as_of": _utc(queue.as_of or doc.as_of), "status": status,
                    }
                )  # fmt: skip
    return rows


def live_csv_lines(rows: list[dict]):
    writer = csv_writer()
    yield writer.writerow([label for _, label, _ in COLUMNS])
    for row in rows:
        yield writer.writerow([cell(row[key]) for key, _, _ in COLUMNS])


def live_xlsx(rows: list[dict]) -> bytes:
    book = Workbook(write_only=True)
    write_sheet(book, "Lag now", COLUMNS, rows)
    buffer = BytesIO()
    book.save(buffer)
    return buffer.getvalue()
