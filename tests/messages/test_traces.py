"""Trace records decoded as the Java client writes them (TraceDataEncoder), worked by hand."""

from __future__ import annotations

from consumers.messages.traces import CONTENT, EVENT, decode


def record(*events: list) -> str:
    return "".join(CONTENT.join(str(f) for f in e) + EVENT for e in events)


ID, OTHER = "7F0000010001", "7F0000010002"


def test_a_send_and_a_failed_then_retried_consumption():
    body = record(
        ["Pub", 1000, "DefaultRegion", "P1", "T", ID, "TagA", "k1", "127.0.0.1:10911", 12, 3, 0, "C0A8", "true"],
        ["Pub", 1001, "DefaultRegion", "P1", "T", OTHER, "TagA", "k2", "127.0.0.1:10911", 12, 4, 0, "C0A9", "true"],
        ["SubBefore", 2000, "DefaultRegion", "G1", "req-1", ID, 0, "k1"],
        ["SubAfter", "req-1", ID, 40, "false", "k1", 4, 2040, "G1"],  # context code 4: FAILED
        ["SubBefore", 12000, "DefaultRegion", "G1", "req-2", ID, 1, "k1"],
    )
    published, consumed = decode(body, ID)
    assert [(p.at_ms, p.group, p.store_host, p.cost_ms, p.success) for p in published] == [
        (1000, "P1", "127.0.0.1:10911", 3, True)
    ]  # the other message's send in the same record is not this one's
    first, second = consumed["req-1"], consumed["req-2"]
    assert (first.group, first.at_ms, first.retry_times, first.cost_ms, first.success, first.result) == (
        "G1", 2000, 0, 40, False, "FAILED",
    )  # fmt: skip
    assert (second.retry_times, second.success) == (1, None)  # begun; its end not in the trace yet


def test_older_records_without_the_offset_id_or_the_after_group():
    body = record(
        ["Pub", 1000, "R", "P1", "T", ID, "", "", "h:1", 5, 7, 0, "false"],  # 13 fields: no offset msg id
        ["SubAfter", "req-9", ID, 8, "true", "k1"],  # no context code, time or group
    )
    published, consumed = decode(body, ID)
    assert [(p.cost_ms, p.success) for p in published] == [(7, False)]
    assert (consumed["req-9"].group, consumed["req-9"].success, consumed["req-9"].result) == ("", True, "")
