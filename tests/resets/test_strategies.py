"""Reset strategies on hand-worked queues: every target and effect below is worked out by hand."""

from __future__ import annotations

import pytest

from consumers.resets.strategies import InvalidReset, QueueState, compute_targets, totals, validate_params

NOW = 1_700_000_000_000
A0 = QueueState("T", "broker-a", 0, min=10, max=100, current=60)
A1 = QueueState("T", "broker-a", 1, min=0, max=50, current=None)  # never committed
B0 = QueueState("T", "broker-b", 0, min=5, max=40, current=40)


def targets(params, **lookups):
    return {t.queue.label: (t.target, t.clamped, t.delta) for t in compute_targets([A0, A1, B0], params, **lookups)}


def test_earliest_and_latest():
    assert targets({"strategy": "earliest"}) == {
        "T@broker-a#0": (10, False, -50),  # 50 re-consumed
        "T@broker-a#1": (0, False, None),
        "T@broker-b#0": (5, False, -35),
    }
    assert targets({"strategy": "latest"})["T@broker-a#0"] == (100, False, 40)  # 40 skipped


def test_time_uses_what_the_broker_found_per_queue():
    found = {"T@broker-a#0": 30, "T@broker-a#1": 50, "T@broker-b#0": 40}
    assert targets({"strategy": "time"}, found_by_time=found) == {
        "T@broker-a#0": (30, False, -30),
        "T@broker-a#1": (50, False, None),
        "T@broker-b#0": (40, False, 0),
    }


def test_shift_clamps_and_leaves_never_committed_queues_alone():
    result = targets({"strategy": "shift", "shift": -55})
    assert result["T@broker-a#0"] == (10, True, -50)  # 60 - 55 = 5, below min 10: clamped
    assert result["T@broker-a#1"] == (None, False, None)
    assert result["T@broker-b#0"] == (5, True, -35)  # 40 - 55 < 5
    assert targets({"strategy": "shift", "shift": 30})["T@broker-a#0"] == (90, False, 30)


def test_exact_and_copy():
    exact = targets({"strategy": "exact", "offsets": {"T@broker-a#0": 70}})
    assert exact == {
        "T@broker-a#0": (70, False, 10),
        "T@broker-a#1": (None, False, None),
        "T@broker-b#0": (None, False, None),
    }
    copied = targets({"strategy": "copy", "source_group": "other"}, source_offsets={"T@broker-b#0": 20})
    assert copied["T@broker-b#0"] == (20, False, -20) and copied["T@broker-a#0"][0] is None


def test_exact_offsets_past_max_or_of_unknown_queues_are_refused():
    with pytest.raises(InvalidReset, match="beyond its max offset 100"):
        targets({"strategy": "exact", "offsets": {"T@broker-a#0": 101}})
    with pytest.raises(InvalidReset, match="not a queue of this reset"):
        targets({"strategy": "exact", "offsets": {"T@broker-c#9": 1}})


def test_totals_per_topic():
    result = compute_targets([A0, A1, B0], {"strategy": "earliest"})
    assert totals(result) == {"T": {"reconsumed": 85, "skipped": 0, "queues": 3}}


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"strategy": "sideways"}, "unknown strategy"),
        ({"strategy": "time"}, "needs timestamp_ms"),
        ({"strategy": "time", "timestamp_ms": NOW + 60_000}, "is in the future"),
        ({"strategy": "shift", "shift": 0}, "non-zero"),
        ({"strategy": "shift", "shift": "3"}, "non-zero"),
        ({"strategy": "exact"}, "needs offsets"),
        ({"strategy": "exact", "offsets": {"T@broker-a#0": -1}}, "whole number >= 0"),
        ({"strategy": "exact", "offsets": {"T@broker-a#0": 2**63}}, "between 0 and 9223372036854775807"),
        (
            {"strategy": "shift", "shift": 10**30},
            "the shift must be between -9223372036854775807 and 9223372036854775807",
        ),
        ({"strategy": "shift", "shift": 2**63}, "the shift must be between"),
        ({"strategy": "shift", "shift": -(2**63)}, "the shift must be between"),  # a long, but -N has no twin
        ({"strategy": "shift", "shift": -(2**63) - 1}, "the shift must be between"),
        ({"strategy": "copy"}, "group to copy offsets from"),
        ({"strategy": "earliest", "topics": "T"}, "list of topic names"),
    ],
)
def test_bad_parameters_are_refused_with_a_message(params, says):
    with pytest.raises(InvalidReset, match=says):
        validate_params(params, now_ms=NOW)


@pytest.mark.parametrize("shift", [2**63 - 1, -(2**63 - 1), 1, -1])
def test_a_shift_at_the_ends_of_its_range_is_taken(shift):
    assert validate_params({"strategy": "shift", "shift": shift}, now_ms=NOW)["shift"] == shift
