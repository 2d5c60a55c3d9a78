"""Group documents: fresh values, carried-over stale parts, unknown instead of zero."""

from __future__ import annotations

import dataclasses

from consumers.live import building, documents
from consumers.live.config import default_thresholds
from consumers.live.health import evaluate
from consumers.live.history import history_tables
from consumers.live.lagtime import LagTime
from consumers.rocketmq import GroupProgress, Problem, QueueProgress
from consumers.rocketmq.models import MessageQueue


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
    doc = building.build_document(
        progress(q("a", 0), q("b", 0, consumer=10), q("a", 0, topic="%RETRY%G", max_offset=5, consumer=2)),
        lag_times={("G", MessageQueue("T", "a", 0)): LagTime(12.5)},
        dlq_count=3,
        previous=None,
    )
    assert (doc.lag, doc.retry_lag, doc.lag_seconds, doc.dlq_count) == (6, 3, 12.5, 3)
    assert [r.topic for r in doc.queues] == ["T", "T", "%RETRY%G"]  # retry queues last
    assert not doc.stale and not doc.lag_partial


def test_lag_seconds_is_unknown_when_a_lagging_queue_was_not_measured():
    doc = building.build_document(
        progress(q("a", 0), q("a", 1)),
        lag_times={
            ("G", MessageQueue("T", "a", 0)): LagTime(3.0),
            ("G", MessageQueue("T", "a", 1)): LagTime(None, "budget"),
        },
        dlq_count=0,
        previous=None,
    )
    assert doc.lag_seconds is None
    assert doc.queues[1].lag_seconds_note == "budget"


def test_queues_of_an_unreadable_broker_are_carried_over_marked_stale():
    previous = building.build_document(
        progress(q("a", 0), q("b", 0, consumer=1)), lag_times={}, dlq_count=0, previous=None
    )
    previous.as_of = 1000.0
    for row in previous.queues:
        row.as_of = 1000.0
    now = building.build_document(
        progress(
            q("a", 0, consumer=9), problems=[Problem("broker", "b", "RequestTimeout: no response", "RequestTimeout")]
        ),
        lag_times={},
        dlq_count=0,
        previous=previous,
    )
    rows = {r.broker: r for r in now.queues}
    assert rows["a"].consumer == 9 and rows["a"].stale_reason is None
    assert rows["b"].consumer == 1 and rows["b"].as_of == 1000.0
    assert rows["b"].stale_reason == "broker unreadable: RequestTimeout: no response"
    assert now.lag_partial and now.lag == 1 + 9


def test_a_group_that_failed_entirely_keeps_its_last_document_marked_stale():
    previous = building.build_document(progress(q("a", 0)), lag_times={}, dlq_count=0, previous=None)
    failed = progress(problems=[Problem("group", "G", "DeadlineExceeded: deadline passed", "DeadlineExceeded")])
    doc = building.build_document(failed, lag_times={}, dlq_count=None, previous=previous)
    assert doc.stale and doc.stale_reason == "DeadlineExceeded: deadline passed"
    assert doc.lag == 6 and doc.as_of == 2000.0  # what we knew, as of when we knew it
    never = building.build_document(failed, lag_times={}, dlq_count=None, previous=None)
    assert never.lag is None and never.as_of is None and never.queues == []


def test_the_health_sample_keeps_only_lagging_queues_and_stale_documents_are_unknown():
    doc = building.build_document(progress(q("a", 0), q("a", 1, consumer=10)), lag_times={}, dlq_count=2, previous=None)
    sample = building.sample(doc, polled_at=2001.0)
    assert sample.queues == {"T@a#0": (4, 6)} and sample.consumed == 14 and sample.lag == 6 and sample.dlq == 2
    doc.stale = True
    assert building.sample(doc, polled_at=2001.0).lag is None


def test_history_rows_come_only_from_fresh_data():
    fresh = building.build_document(progress(q("a", 0), q("a", 1)), lag_times={}, dlq_count=0, previous=None)
    fresh.set_health(evaluate([building.sample(fresh, 2000.0)], default_thresholds()))
    stale = dataclasses.replace(fresh, group="H", stale=True)
    tables = history_tables([fresh, stale])
    assert tables["group_stats"]["group"].to_pylist() == ["G"]
    assert tables["queue_offsets"].num_rows == 2
    assert tables["queue_offsets"]["ts"].to_pylist()[0].timestamp() == 2000.0


def test_queues_of_a_missing_broker_stay_stale_and_the_lag_total_says_incomplete():
    previous = building.build_document(
        progress(q("a", 0, consumer=8), q("b", 0, consumer=1)), lag_times={}, dlq_count=0, previous=None
    )
    why = "missing since 2026-11-23 02:00:00 UTC (not in the name server)"
    # the name server dropped broker b: the poll only read a, with no problem of its own
    now = building.build_document(
        progress(q("a", 0, consumer=9)), lag_times={}, dlq_count=0, previous=previous, unreachable={"b": why}
    )
    rows = {r.broker: r for r in now.queues}
    assert set(rows) == {"a", "b"} and rows["b"].stale_reason == why and rows["b"].consumer == 1
    assert now.lag == (10 - 9) + (10 - 1)  # last known values of b, not a smaller number
    assert now.lag_incomplete == f"incomplete: b {why}"
    assert {"scope": "broker", "target": "b", "error": why} in now.problems
    assert building.sample(now, 2001.0).complete is False  # health: UNKNOWN, not judged on half


def test_a_broadcasting_groups_tps_is_the_clients_sum_and_unknown_when_a_client_is_silent():
    from consumers.rocketmq.models import ClientConnection, ConsumerConnection, ConsumerRunningInfo
    from consumers.rocketmq.models.progress import ConsumeStatus

    def running(tps: float) -> ConsumerRunningInfo:
        status = ConsumeStatus(None, None, None, tps, 0.0, 0)
        retry = ConsumeStatus(None, None, None, 100.0, 0.0, 0)  # retry topic rates are not consumption
        return ConsumerRunningInfo({"messageModel": "BROADCASTING"}, [], {}, {"T": status, "%RETRY%G": retry})

    group = progress(online=True)
    connections = [ClientConnection(c, "127.0.0.1:1", "JAVA", 479) for c in ("c1", "c2")]
    group.connection = ConsumerConnection(connections, {}, "CONSUME_PASSIVELY", "BROADCASTING", None)
    group.consume_tps = 0.0  # what the broker says: it keeps no stats for broadcasting groups
    group.running_info = {"c1": running(2.0), "c2": running(1.5)}
    doc = building.build_document(group, lag_times={}, dlq_count=0, previous=None)
    assert doc.consume_tps == 3.5 and "sum" in doc.consume_tps_note
    del group.running_info["c2"]
    doc = building.build_document(group, lag_times={}, dlq_count=0, previous=None)
    assert doc.consume_tps is None and "could not all be read" in doc.consume_tps_note


def test_documents_and_meta_survive_the_wire_unchanged():
    import json

    doc = building.build_document(progress(q("a", 0), q("b", 1)), lag_times={}, dlq_count=2, previous=None)
    assert documents.GroupDocument.from_wire(json.loads(json.dumps(doc.to_wire()))) == doc
    meta = documents.ClusterMeta(
        1, "c", 10.0, 0.5, "degraded", brokers=[documents.BrokerState("b", None, state="missing")]
    )
    assert documents.ClusterMeta.from_wire(json.loads(json.dumps(meta.to_wire()))) == meta


def test_clients_unknown_say_which_read_failed_and_known_ones_need_no_note():
    refused = "ConnectError: connection refused"
    cases = {
        "connection": progress(q("a", 0), online=None, problems=[Problem("connection", "G", refused, "ConnectError")]),
        "proxy": progress(q("a", 0), online=None, problems=[Problem("proxy", "10.0.0.5:8081", refused, "x")]),
        "nothing": progress(q("a", 0), online=None),
        "offline": progress(q("a", 0), online=False),
    }
    notes = {
        name: (doc.clients, doc.clients_note)
        for name, p in cases.items()
        for doc in [building.build_document(p, lag_times={}, dlq_count=0, previous=None)]
    }
    assert notes == {
        "connection": (None, f"no broker answered who is connected ({refused})"),
        "proxy": (None, f"proxy 10.0.0.5:8081 could not be read ({refused}); the group's gRPC clients may be there"),
        "nothing": (None, "this poll could not ask who is connected"),
        "offline": (0, None),  # known: nobody
    }
