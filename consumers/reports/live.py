""" "Report now": the current lag of every queue from the live snapshot in Redis, as CSV or
XLSX, with what comes next for each queue: its drain forecast, and for a group that filters by
tags or will lose messages to retention, the lag its tags take and the loss. No client addresses
(reports go to people outside operations); a queue we could not read says why in its status,
with empty numbers rather than zeros. Headers and words in the language of the page it is
downloaded from (the CSV's retry column too: yes or no); the other values as in the saved
reports (csvfile, xlsx)."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator
from io import BytesIO

from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _
from openpyxl import Workbook

from ..identity import EVERYTHING, Scope
from ..languages.evidence import translate_evidence
from ..live import snapshots
from ..models import Cluster
from ..web.csvstream import BOM, csv_writer
from .csvfile import cell
from .xlsx import write_sheet

COLUMNS = [
    ("cluster", _("cluster"), "text"), ("group", _("group"), "text"), ("topic", _("topic"), "text"),
    ("broker", _("broker"), "text"), ("queue_id", _("queue"), "int"), ("retry", _("retry topic"), "bool"),
    ("max", _("broker offset"), "int"), ("consumer", _("consumer offset"), "int"), ("lag", _("lag (msgs)"), "int"),
    ("lag_seconds", _("lag (s)"), "float"), ("last_consumed", _("last consumed (UTC)"), "datetime"),
    ("as_of", _("read at (UTC)"), "datetime"), ("status", _("status"), "text"),
    ("tag_lag", _("lag for its tags (msgs)"), "int"), ("drain_seconds", _("drains in (s)"), "float"),
    ("retention_lost", _("lost to retention (msgs)"), "int"),
]  # fmt: skip


def _utc(epoch_seconds: float | None) -> dt.datetime | None:
    return None if epoch_seconds is None else dt.datetime.fromtimestamp(epoch_seconds, dt.UTC)


def live_rows(redis, clusters: list[Cluster], group_filter: str = "", scope: Scope = EVERYTHING) -> list[dict]:
    rows = []
    for cluster in clusters:
        for name, doc in sorted(snapshots.read_details(redis, cluster.pk).items()):
            if group_filter.lower() not in name.lower() or not scope.sees_group(cluster.name, name):
                continue
            drains = {d["queue"]: d.get("seconds") for d in doc.drain_queues}
            retention = doc.retention or {}
            losses = {q["queue"]: q["lost"] for q in retention.get("queues", ())}
            for queue in doc.queues:
                known = pgettext("report status", "ok") if queue.lag is not None else gettext("unknown")
                status = translate_evidence(queue.stale_reason or doc.stale_reason) or known
                rows.append(
                    {
                        "cluster": cluster.name, "group": name, "topic": queue.topic, "broker": queue.broker,
                        "queue_id": queue.queue_id, "retry": queue.retry, "max": queue.max,
                        "consumer": queue.consumer, "lag": queue.lag, "lag_seconds": queue.lag_seconds,
                        "last_consumed": _utc(queue.last_consume_ms / 1000) if queue.last_consume_ms else None,
                        "as_of": _utc(queue.as_of or doc.as_of), "status": status, "tag_lag": queue.tag_lag,
                        # unknown stays empty: no forecast yet, a queue not judged for retention
                        "drain_seconds": 0.0 if queue.lag == 0 else drains.get(queue.label),
                        "retention_lost": _lost(queue, retention, losses),
                    }
                )  # fmt: skip
    return rows


def _lost(queue, retention: dict, losses: dict) -> int | None:
    if queue.retry or queue.lag == 0 or queue.label in losses:
        return None if queue.retry else losses.get(queue.label, 0)
    return 0 if retention.get("state") in ("AT_RISK", "SAFE") else None


def live_csv_lines(rows: list[dict]) -> Iterator[str]:
    writer = csv_writer()
    # the header and the words for yes and no now, in the request's language: the lines are
    # written after the view has returned
    header = BOM + writer.writerow([str(label) for _key, label, _kind in COLUMNS])
    words = {True: gettext("yes"), False: gettext("no")}

    def line(row: dict) -> str:
        return writer.writerow(
            [words[row[key]] if kind == "bool" and row[key] in words else cell(row[key]) for key, _l, kind in COLUMNS]
        )

    return itertools.chain([header], (line(row) for row in rows))


def live_xlsx(rows: list[dict]) -> bytes:
    book = Workbook(write_only=True)
    write_sheet(book, gettext("Lag now"), COLUMNS, rows)
    buffer = BytesIO()
    book.save(buffer)
    return buffer.getvalue()
