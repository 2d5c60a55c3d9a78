"""Group documents: fresh values, carried-over stale parts, unknown instead of zero."""

from __future__ import annotations

from consumers import documents
from consumers.health import Thresholds, evaluate
from consumers.lagtime import LagTime
from consumers.rocketmq import GroupProgress, Problem, QueueProgress
from consumers.rocketmq.models import MessageQueue
from consumers.services.polling import history_tables


def progress(*queues: QueueProgress, problems=(), online=False) -> GroupProgress:
    result = GroupProgress(group="G", fetched_at=2000.0, queues=list(queues), online=online)
    result.problems = list(problems)
    return result


def q(broker: str, queue_id: int, *, max_offset=10, consumer=4, topic="T", min_offset=0) -> QueueProgress:
    return QueueProgress(topic, broker, queue_id, max_offset, consumer, min_offset, max_offset, 1999000, ())


def lag_times(**seconds):
    return {
        ("G", MessageQueue("T", b, int(i))): LagTime(v) for (b, i), v in ((k.split("_"), v) for k, v in seconds.items())
    }


def test_a_fresh_document_sums_main_and_retry_lag_apart():
    doc = documents.build_document(
        progress(q("a", 0), q("b", 0, consumer=10), q("a", 0, topic="%RETRY%G", max_offset=5, consumer=2)),
        lag_times={("G", MessageQueue("T", "a", 0)): LagTime(12.5)},
        dlq_count=3,
        previous=None,
    )
    assert (doc["lag"], doc["retry_lag"], doc["lag_seconds"], doc["dlq_count"]) == (6, 3, 12.5, 3)
    assert [r["topic"] for r in doc["queues"]] == ["T", "T", "%RETRY%G"]  # retry queues last
    assert not doc["stale"] and not doc["lag_partial"]


def test_lag_seconds_is_unknown_when_a_lagging_queue_was_not_measured():
    doc = documents.build_document(
        progress(q("a", 0), q("a", 1)),
        lag_times={
            ("G", MessageQueue("T", "a", 0)): LagTime(3.0),
            ("G", MessageQueue("T", "a", 1)): LagTime(None, "budget"),
        },
        dlq_count=0,
        previous=None,
    )
    assert doc["lag_seconds"] is None
    assert doc["queues"][1]["lag_seconds_note"] == "budget"


def test_queues_of_an_unreadable_broker_are_carried_over_marked_stale():
    previous = documents.build_document(
        progress(q("a", 0), q("b", 0, consumer=1)), lag_times={}, dlq_count=0, previous=None
    )
    previous["as_of"] = 1000.0
    for row in previous["queues"]:
        row["as_of"] = 1000.0
    now = documents.build_document(
        progress(
            q("a", 0, consumer=9), problems=[Problem("broker", "b", "RequestTimeout: no response", "RequestTimeout")]
        ),
        lag_times={},
        dlq_count=0,
        previous=previous,
    )
    rows = {r["broker"]: r for r in now["queues"]}
    assert rows["a"]["consumer"] == 9 and rows["a"]["stale_reason"] is None
    assert rows["b"]["consumer"] == 1 and rows["b"]["as_of"] == 1000.0
    assert rows["b"]["stale_reason"] == "broker unreadable: RequestTimeout: no response"
    assert now["lag_partial"] and now["lag"] == 1 + 9


def test_a_group_that_failed_entirely_keeps_its_last_document_marked_stale():
    previous = documents.build_document(progress(q("a", 0)), lag_times={}, dlq_count=0, previous=None)
    failed = progress(problems=[Problem("group", "G", "DeadlineExceeded: deadline passed", "DeadlineExceeded")])
    doc = documents.build_document(failed, lag_times={}, dlq_count=None, previous=previous)
    assert doc["stale"] and doc["stale_reason"] == "DeadlineExceeded: deadline passed"
    assert doc["lag"] == 6 and doc["as_of"] == 2000.0  # what we knew, as of when we knew it
    never = documents.build_document(failed, lag_times={}, dlq_count=None, previous=None)
    assert never["lag"] is None and never["as_of"] is None and never["queues"] == []


def test_the_health_sample_keeps_only_lagging_queues_and_stale_documents_are_unknown():
    doc = documents.build_document(
        progress(q("a", 0), q("a", 1, consumer=10)), lag_times={}, dlq_count=2, previous=None
    )
    sample = documents.sample(doc, polled_at=2001.0)
    assert sample.queues == {"T@a#0": (4, 6)} and sample.consumed == 14 and sample.lag == 6 and sample.dlq == 2
    doc["stale"] = True
    assert documents.sample(doc, polled_at=2001.0).lag is None


def test_history_rows_come_only_from_fresh_data():
    fresh = documents.build_document(progress(q("a", 0), q("a", 1)), lag_times={}, dlq_count=0, previous=None)
    documents.set_health(fresh, evaluate([documents.sample(fresh, 2000.0)], Thresholds()))
    stale = dict(fresh, group="H", stale=True)
    tables = history_tables({"G": fresh, "H": stale})
    assert tables["group_stats"]["group"].to_pylist() == ["G"]
    assert tables["queue_offsets"].num_rows == 2
    assert tables["queue_offsets"]["ts"].to_pylist()[0].timestamp() == 2000.0
