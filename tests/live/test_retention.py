"""Retention risk (consumers/live/retention.py) worked by hand: deletion hours in the console's
time zone, the messages a queue loses at each deletion time, the current commit-log file kept,
and the finding it puts in a group's health."""

from __future__ import annotations

import asyncio
import datetime as dt
from types import SimpleNamespace

import pytest
from django.utils import timezone

from consumers.live import retention
from consumers.live.documents import GroupDocument, QueueRow
from consumers.live.health import Finding, Health
from consumers.rocketmq import RocketMQError
from consumers.rocketmq.models import MessageQueue
from consumers.rocketmq.ops.consumequeue import UnitSlice

HOUR = 3600.0


def at(text: str) -> float:
    """A time in the console's zone (the tests' settings: UTC)."""
    return timezone.make_aware(dt.datetime.fromisoformat(text)).timestamp()


def row(queue_id: int, consumer: int, lag: int, lag_seconds: float | None, broker: str = "broker-a") -> QueueRow:
    return QueueRow(topic="T", broker=broker, queue_id=queue_id, retry=False, min=0, max=consumer + lag,
                    consumer=consumer, lag=lag, lag_seconds=lag_seconds, lag_seconds_note=None, pull=None,
                    last_consume_ms=None, clients=[], expired=False, as_of=1.0)  # fmt: skip


def test_deletion_hours_are_parsed_and_fall_at_the_starts_of_those_hours():
    assert retention.delete_hours("04") == (4,) and retention.delete_hours("01;04; 25;x") == (1, 4)
    now = at("2026-11-28 19:20:00")
    assert retention.deletion_times(now, (4,), 24 * HOUR) == [at("2026-11-29 04:00:00")]
    assert retention.deletion_times(now, (4, 20), 30 * HOUR) == [
        at("2026-11-28 20:00:00"), at("2026-11-29 04:00:00"), at("2026-11-29 20:00:00")
    ]  # fmt: skip
    assert retention.deletion_times(now, (19,), 2 * HOUR) == [now]  # within a deletion hour: now
    assert retention.deletion_times(now, (), 24 * HOUR) == []


def test_a_stopped_groups_queue_loses_what_is_older_than_the_reserved_time_at_the_next_deletion():
    # files kept 48 h, deleted at 04:00; now 19:20, so the next deletion is 8 h 40 min away and
    # takes what was stored before 04:00 two days earlier: 39 h 20 min ago. The oldest unconsumed
    # message is 40 h old, 8,000 are behind, stored evenly since: 40 min of 40 h of them go
    now = at("2026-11-28 19:20:00")
    broker = retention.BrokerRetention(48, (4,), current_file_start=10**9)
    q = {"topic": "T", "broker": "broker-a", "queue_id": 3, "consumer": 1_000, "lag": 8_000, "lag_seconds": 40 * HOUR}
    risk = retention.queue_risk(q, broker, safe_from=9_000, rate=0.0, now=now, horizon=24 * HOUR)
    assert risk == retention.QueueRisk("T@broker-a#3", 133, 8 * HOUR + 40 * 60)  # 8,000 x 40/2,400
    # the current commit-log file is kept: from offset 1,050 on, the messages are in it
    kept = retention.queue_risk(q, broker, safe_from=1_050, rate=0.0, now=now, horizon=24 * HOUR)
    assert kept.lost == 50
    # consuming 0.5/s, by 04:00 it has read 15,600 of them: nothing lost
    assert retention.queue_risk(q, broker, safe_from=9_000, rate=0.5, now=now, horizon=24 * HOUR) is None
    # 30 h old instead: the first loss is at the deletion after next, beyond a 24 h horizon
    young = {**q, "lag_seconds": 30 * HOUR}
    assert retention.queue_risk(young, broker, safe_from=9_000, rate=0.0, now=now, horizon=24 * HOUR) is None
    later = retention.queue_risk(young, broker, safe_from=9_000, rate=0.0, now=now, horizon=48 * HOUR)
    # then 48 h before 04:00 the day after is 15 h 20 min ago: 14 h 40 min of the 30 h
    assert (later.in_seconds, later.lost) == (32 * HOUR + 40 * 60, round(8_000 * (30 - 15 - 1 / 3) / 30))


def test_the_finding_names_the_first_queue_and_counts_them_all_and_unknown_is_said():
    now = at("2026-11-28 19:20:00")
    doc = GroupDocument(group="G", as_of=now, online=False, lag=9_050)
    doc.queues = [row(0, 1_000, 8_000, 40 * HOUR), row(1, 0, 1_000, 45 * HOUR), row(2, 0, 50, 60.0)]
    mq = lambda i: MessageQueue("T", "broker-a", i)  # noqa: E731
    facts = retention.RetentionFacts({"broker-a": retention.BrokerRetention(48, (4,), 10**9)},
                                     {mq(0): 9_000, mq(1): 1_000})  # fmt: skip
    figure, evidence = retention.judge(doc, facts, now, 24 * HOUR)
    # queue 1: 45 h behind, 5 h 40 min of them go: 1,000 x 5.67/45
    assert figure["state"] == "AT_RISK" and [(q["queue"], q["lost"]) for q in figure["queues"]] == [
        ("T@broker-a#0", 133),
        ("T@broker-a#1", 126),
    ]  # both at 04:00: the larger loss first
    assert evidence == retention.RISK_MORE % {"queues": 2, "count": 259, "queue": "T@broker-a#0", "hours": "8.7",
                                              "reserved": "48", "when": "04:00"}  # fmt: skip
    health = Health("STOPPED", [Finding("STOPPED", "no client is online and lag is 9,050")], 300.0)
    judged = health.adding(Finding("RETENTION_RISK", evidence))
    assert judged.state == "STOPPED" and [f.state for f in judged.findings] == ["STOPPED", "RETENTION_RISK"]
    falling = Health("OK", [Finding("OK", "lag 9,050, consuming")], 300.0).adding(Finding("RETENTION_RISK", evidence))
    assert falling.state == "RETENTION_RISK" and [f.state for f in falling.findings] == ["RETENTION_RISK"]
    # a broker whose config could not be read: unknown, with why, never "safe"
    unread = retention.RetentionFacts({"broker-a": retention.BrokerRetention(error="RequestTimeout")})
    assert retention.judge(doc, unread, now, 24 * HOUR) == (
        {"state": "UNKNOWN", "reason": retention.CONFIG_UNREAD % {"error": "RequestTimeout"}, "queues": [],
         "horizon_hours": 24.0}, None)  # fmt: skip
    young = retention.RetentionFacts({"broker-a": retention.BrokerRetention(48, (4,), 10**9)})
    assert retention.judge(doc, young, now, 24 * HOUR)[0]["state"] == "SAFE"


def test_the_first_offset_in_the_current_file_is_found_by_binary_search_and_kept_per_file(redis):
    positions = {q: [o * 1_000 + q for o in range(5_000)] for q in range(2)}  # commit-log positions per offset
    asked = []

    async def units(address, mq, start, count):
        asked.append(start)
        if mq.queue_id == 1 and start > 4_000:
            raise RocketMQError("RequestTimeout: no response")
        return UnitSlice(start, [0], positions[mq.queue_id][start : start + 1], 0, 5_000)

    async def broker_config(address):
        return {"fileReservedTime": "48", "deleteWhen": "04", "mappedFileSizeCommitLog": "1048576"}

    client = SimpleNamespace(consume_queues=SimpleNamespace(units=units),
                             topology=SimpleNamespace(broker_config=broker_config))  # fmt: skip
    runtime = SimpleNamespace(table={"commitLogMaxOffset": str(4_500_123)})
    queues = [SimpleNamespace(queue=MessageQueue("T", "broker-a", q), broker_name="broker-a", retry=False, lag=4_000,
                              min_offset=0, broker_offset=5_000) for q in range(2)]  # fmt: skip
    status = SimpleNamespace(address="127.0.0.1:1", runtime=runtime, error=None)
    snapshot = SimpleNamespace(brokers={"broker-a": status}, groups={"G": SimpleNamespace(group="G", queues=queues)})
    lag = {("G", q.queue): SimpleNamespace(seconds=30 * HOUR) for q in queues}

    def read():
        return asyncio.run(retention.read(client, snapshot, lag, now=at("2026-11-28 19:20:00"), redis=redis,
                                          cache_key="rt", horizon=24 * HOUR))  # fmt: skip

    facts = read()
    start = 4_500_123 // 1_048_576 * 1_048_576  # the current file's first position: 4,194,304
    assert facts.brokers["broker-a"] == retention.BrokerRetention(48.0, (4,), start)
    first = next(o for o, p in enumerate(positions[0]) if p >= start)
    assert facts.safe_from[MessageQueue("T", "broker-a", 0)] == first == 4_195
    assert facts.safe_from[MessageQueue("T", "broker-a", 1)].startswith("retention unknown: the commit-log positions")
    assert 10 <= len(asked) <= 2 * 14  # log2(5,000) probes a queue
    asked.clear()
    assert read().safe_from[MessageQueue("T", "broker-a", 0)] == 4_195 and 4_195 not in asked  # from Redis
    # messages too young to go within the horizon are not looked at
    lag.update({k: SimpleNamespace(seconds=HOUR) for k in lag})
    asked.clear()
    assert read().safe_from == {} and asked == []


@pytest.mark.parametrize("config", [{}, {"fileReservedTime": "x", "mappedFileSizeCommitLog": "1"}])
def test_a_config_without_the_figures_is_an_error_not_a_guess(config):
    found = retention._broker(config, SimpleNamespace(table={"commitLogMaxOffset": "10"}))
    assert found.error and found.reserved_hours is None
