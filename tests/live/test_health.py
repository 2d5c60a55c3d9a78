"""Health states from hand-made sample series; each asserts the state and its evidence."""

from __future__ import annotations

import dataclasses

from consumers.live.health import Sample, Thresholds, evaluate

T = Thresholds(window_seconds=300, min_samples=3, stall_seconds=60, min_lag=1, retry_rate_per_minute=60)


def series(*points, **common) -> list[Sample]:
    """Samples 15 s apart; each point is a dict of Sample fields."""
    return [Sample(t=1000 + 15 * i, **{"online": True, **common, **p}) for i, p in enumerate(points)]


def test_no_sample_or_an_unreadable_group_is_unknown_with_the_reason():
    assert evaluate([], T).state == "UNKNOWN"
    health = evaluate(series({"lag": 5}), T, unknown_reason="broker-a: RequestTimeout")
    assert health.state == "UNKNOWN" and "RequestTimeout" in health.findings[0].evidence
    assert evaluate(series({"lag": None}), T).state == "UNKNOWN"


def test_no_client_and_lag_is_stopped():
    health = evaluate(series({"lag": 40, "online": False}), T)
    assert health.state == "STOPPED"
    assert health.findings[0].evidence == "no client is online and lag is 40"


def test_a_lagging_queue_whose_offset_does_not_move_for_the_stall_time_is_stalled():
    pinned = {"T@b#1": (7, 3)}
    samples = series(*({"lag": 3, "queues": pinned, "consumed": 100 + i} for i in range(5)))  # 60 s
    health = evaluate(samples, T)
    assert health.state == "STALLED"
    assert "T@b#1 has stayed at offset 7 with lag 3 for 60s" in health.findings[0].evidence
    # four samples span 45 s: not yet
    assert evaluate(samples[:4], T).state != "STALLED"


def test_a_stalled_finding_names_where_each_queue_is_pinned_longest_first():
    # T@b-a#0 pinned from the start (75 s), %RETRY%g@b-b#2 from the second sample (60 s)
    points = [{"lag": 5, "queues": {"T@b-a#0": (7, 3), "%RETRY%g@b-b#2": (40 + (i == 0), 2)}} for i in range(6)]
    finding = evaluate(series(*points), T).findings[0]
    assert finding.state == "STALLED"
    assert finding.to_wire()["pinned"] == [
        {"topic": "T", "broker": "b-a", "queue_id": 0, "offset": 7},
        {"topic": "%RETRY%g", "broker": "b-b", "queue_id": 2, "offset": 40},
    ]
    assert "pinned" not in evaluate(series({"lag": 0}), T).findings[0].to_wire()  # only a stall says where


def test_polls_that_knew_of_no_client_do_not_count_towards_a_stall():
    """A proxy restarting: its gRPC group's clients were unknown for 75 s (offset pinned, as
    nothing could consume), then back. Stalled only once they have been online the stall time."""
    pinned = {"T@b#1": (7, 3)}
    restart = [{"lag": 3, "queues": pinned, "consumed": 100, "online": None} for _ in range(6)]
    back = [{"lag": 3, "queues": pinned, "consumed": 100} for _ in range(5)]  # online again, 60 s
    assert evaluate(series(*restart, back[0]), T).state != "STALLED"
    assert evaluate(series(*restart, *back[:4]), T).state != "STALLED"  # 45 s online
    assert evaluate(series(*restart, *back), T).state == "STALLED"


def test_an_offset_that_moved_inside_the_stall_time_is_not_stalled():
    points = [{"lag": 3, "queues": {"q": (o, 3)}, "consumed": o} for o in (5, 6, 7, 8, 9)]
    assert evaluate(series(*points), T).state != "STALLED"


def test_growing_lag_is_falling_behind_and_shrinking_lag_is_catching_up():
    behind = evaluate(series(*({"lag": lag, "consumed": i} for i, lag in enumerate((10, 20, 30, 40)))), T)
    assert behind.state == "FALLING_BEHIND" and behind.findings[0].evidence == "lag grew from 10 to 40 over 45s"
    catching = evaluate(series(*({"lag": lag, "consumed": i} for i, lag in enumerate((40, 30, 20)))), T)
    assert catching.state == "CATCHING_UP" and catching.findings[0].evidence == "lag fell from 40 to 20 over 30s"


def test_no_lag_is_idle_without_consumption_and_ok_with_it():
    idle = evaluate(series(*({"lag": 0, "consumed": 50} for _ in range(4))), T)
    assert idle.state == "IDLE" and idle.findings[0].evidence == "no lag and no consumption in 45s"
    assert evaluate(series(*({"lag": 0, "consumed": 50 + i} for i in range(4))), T).state == "OK"


def test_offsets_below_retention_outrank_everything_but_unknown():
    health = evaluate(series({"lag": 9, "online": False, "expired": ["T@b#0"]}), T)
    assert [f.state for f in health.findings] == ["OFFSET_EXPIRED", "STOPPED"]
    assert health.state == "OFFSET_EXPIRED" and "T@b#0" in health.findings[0].evidence


def test_retry_topic_growth_over_the_rate_is_a_retry_storm():
    points = [{"lag": 0, "consumed": i, "retry_offset": 100 + 40 * i} for i in range(5)]  # 160 in 60 s
    health = evaluate(series(*points), T)
    assert health.state == "RETRY_STORM"
    evidence = (
        "160 messages went back for redelivery in 60s (failed, or timed out in flight: a client that left "
        "holding messages sends them back too) (160/min, threshold 60/min)"
    )
    assert health.findings[0].evidence == evidence
    slow = [{"lag": 0, "consumed": i, "retry_offset": 100 + 10 * i} for i in range(5)]
    assert evaluate(series(*slow), T).state != "RETRY_STORM"


def test_a_pop_groups_redeliveries_are_its_retry_writes_less_its_dlq_arrivals():
    """Hand-worked: 40 messages fail 3 times each (max attempts 3) in 60 s. The retry topic is
    written 3 times per message (120), the DLQ gains 40, the clients saw 80 redeliveries: with a
    threshold of 100/min that is no storm for a POP group, and a storm for a classic one."""
    steps = [(0, 0), (30, 10), (60, 20), (90, 30), (120, 40)]  # (retry writes, dead letters)
    pop = [{"lag": 0, "consumed": i, "retry_offset": w, "dlq": d, "pop": True} for i, (w, d) in enumerate(steps)]
    fast = dataclasses.replace(T, retry_rate_per_minute=100)
    assert "RETRY_STORM" not in _states(evaluate(series(*pop), fast))
    slow = dataclasses.replace(T, retry_rate_per_minute=60)
    assert "80 messages went back for redelivery in 60s" in _evidence(evaluate(series(*pop), slow), "RETRY_STORM")
    classic = [{**p, "pop": False} for p in pop]
    assert "RETRY_STORM" in _states(evaluate(series(*classic), fast))
    # a DLQ that shrinks (retention) takes nothing off: only its rises are arrivals
    shrunk = [{**p, "dlq": d} for p, d in zip(pop, (50, 60, 5, 15, 25), strict=True)]
    assert "90 messages went back" in _evidence(evaluate(series(*shrunk), slow), "RETRY_STORM")
    # unknown DLQ sizes: a POP group's redeliveries are not judged from those polls
    assert "RETRY_STORM" not in _states(evaluate(series(*[{**p, "dlq": None} for p in pop]), slow))
    assert Sample.from_wire(Sample(t=1, online=True, lag=0, pop=True).to_wire()).pop is True


def _states(health) -> list[str]:
    return [f.state for f in health.findings]


def _evidence(health, state: str) -> str:
    return next(f.evidence for f in health.findings if f.state == state)


def test_new_dead_letters_are_dlq_growing():
    points = [{"lag": 0, "consumed": i, "dlq": d} for i, d in enumerate((2, 2, 5))]
    health = evaluate(series(*points), T)
    assert health.state == "DLQ_GROWING" and health.findings[0].evidence == "3 new dead letter(s) in 30s (now 5)"


def test_only_samples_inside_the_window_count():
    old = [Sample(t=0, online=True, lag=500, consumed=1)]
    recent = series(*({"lag": lag, "consumed": i} for i, lag in enumerate((10, 9, 8))))
    health = evaluate(old + recent, T)
    assert health.findings[0].evidence == "lag fell from 10 to 8 over 30s"


def test_overrides_replace_only_what_they_set():
    custom = T.with_overrides({"stall_seconds": 20, "window_seconds": None, "unknown": 1})
    assert (custom.stall_seconds, custom.window_seconds) == (20, 300)
    samples = series(*({"lag": 3, "queues": {"q": (7, 3)}, "consumed": 1} for _ in range(3)))  # 30 s
    assert evaluate(samples, custom).state == "STALLED" and evaluate(samples, T).state != "STALLED"


def test_samples_survive_their_wire_form():
    sample = Sample(5.0, True, 3, {"q": (1, 3)}, 10, 4, 2, ["q"], False)
    assert Sample.from_wire(sample.to_wire()) == sample


def test_a_paused_group_is_paused_not_stalled_and_says_where():
    """consumeEnable false on a broker: the pause explains the stall, and is the state."""
    thresholds = Thresholds(window_seconds=300, min_samples=2, stall_seconds=60, min_lag=1, retry_rate_per_minute=100)
    samples = [Sample(t=t, online=True, lag=50, queues={"T@broker-a#0": (7, 50)}, consumed=7, paused=["broker-a"])
               for t in (0, 30, 60, 90)]  # fmt: skip
    health = evaluate(samples, thresholds)
    assert health.state == "PAUSED" and {f.state for f in health.findings} == {"PAUSED", "STALLED"}
    assert health.findings[0].evidence == (
        "consumption paused: consumeEnable is false on broker-a, which refuse its pulls"
    )
    again = Sample.from_wire(samples[-1].to_wire())
    assert again.paused == ["broker-a"] and Sample.from_wire(samples[-1].to_wire()[:11]).paused == []
