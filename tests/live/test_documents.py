"""A group's document as kept in Redis (`to_stored`): smaller than `to_wire`, read back the same,
and the form written before (`to_wire`'s) still read."""

from __future__ import annotations

import dataclasses
import json

from consumers.live.documents import QUEUE_FIELDS, GroupDocument, QueueRow
from consumers.live.forecast import forecast
from consumers.live.health import Sample, Thresholds


def _queue(i: int, **changes) -> QueueRow:
    values = {f.name: None for f in dataclasses.fields(QueueRow)}
    values.update(topic="T", broker="broker-a", queue_id=i, retry=False, lag=i, consumer=10 - i, max=10, clients=["c1"])
    return QueueRow(**{**values, **changes})


THRESHOLDS = Thresholds(window_seconds=300, min_samples=3, stall_seconds=60, min_lag=1, retry_rate_per_minute=10)
samples = [
    Sample(t=t, online=True, lag=28, queues={f"T@broker-a#{i}": (10 * t, i) for i in range(1, 8)}) for t in (0, 15, 30)
]


def _document() -> GroupDocument:
    doc = GroupDocument("orders", 1700000000.5, online=True, clients=1, lag=28, topics=["T"], health={"state": "OK"})
    doc.queues = [_queue(i) for i in range(8)] + [_queue(0, topic="%RETRY%orders", retry=True, tag_lag=3)]
    doc.set_drain(forecast(samples, THRESHOLDS))
    assert len(doc.drain_queues) == 7  # queues 1-7 lag
    return doc


def test_a_stored_document_reads_back_as_it_was():
    doc = _document()
    stored = json.dumps(doc.to_stored())
    assert GroupDocument.from_wire(json.loads(stored)) == doc
    assert len(stored) < 0.5 * len(json.dumps(doc.to_wire()))  # the queues' names once, no nulls


def test_the_summary_of_a_stored_document_is_its_summary_even_with_fields_added_since():
    doc = _document()
    stored = json.loads(json.dumps(doc.to_stored()))
    assert GroupDocument.summary_of(stored) == doc.summary()
    del stored["topic_lags"], stored["tag_filters_as_seen"]  # as if stored before they were added
    summary = GroupDocument.summary_of(stored)
    assert summary == {**doc.summary(), "topic_lags": {}, "tag_filters_as_seen": False}


def test_the_detail_hash_keeps_the_summary_fields_first_and_says_where_they_end():
    doc = _document()
    raw = doc.encode()
    assert GroupDocument.decode(raw) == doc and GroupDocument.summary_from(raw) == doc.summary()
    end = int(json.loads(raw)["_h"])  # any JSON reader reads it whole (an older release beside this one)
    head = json.loads(raw[:end] + b"}")  # what the list decodes of a row
    assert "queues" not in head and end < len(raw) / 2
    assert {k for k in head if k != "_h"} == {k for k in doc.to_stored() if k in doc.summary()}
    doc.group = 'a",\n"b'
    assert GroupDocument.decode(doc.encode()) == doc and GroupDocument.summary_from(doc.encode())["group"] == doc.group
    # stored without "_h" before: read as it was
    assert GroupDocument.decode(json.dumps(doc.to_stored()).encode()) == doc
    assert GroupDocument.summary_from(json.dumps(doc.to_stored()).encode()) == doc.summary()


def test_the_form_written_before_is_still_read():
    doc = _document()
    assert GroupDocument.from_wire(json.loads(json.dumps(doc.to_wire()))) == doc


def test_a_queue_field_added_since_takes_its_default_and_one_removed_is_dropped():
    doc = _document()
    stored = doc.to_stored()
    at = QUEUE_FIELDS.index("tag_lag_note")
    stored["queue_fields"] = [*QUEUE_FIELDS[:at], *QUEUE_FIELDS[at + 1 :], "gone_since"]  # older: no tag_lag_note
    stored["queues"] = [[*row[:at], *row[at + 1 :], "x"] for row in stored["queues"]]
    back = GroupDocument.from_wire(json.loads(json.dumps(stored)))
    assert back == doc and all(q.tag_lag_note is None for q in back.queues)
