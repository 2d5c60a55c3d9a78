"""A reset's effect against what was approved: hand-worked examples, no broker."""

from __future__ import annotations

import pytest

from consumers.resets import effect


def row(label: str, target: int | None, current: int | None, maximum: int = 1000) -> dict:
    delta = None if target is None or current is None else target - current
    return {"label": label, "target": target, "current": current, "max": maximum, "delta": delta}


@pytest.fixture(autouse=True)
def tolerance(settings):
    settings.CHANGE_EFFECT_TOLERANCE_PERCENT = 10
    settings.CHANGE_EFFECT_TOLERANCE_MESSAGES = 100


def test_the_same_targets_after_the_group_moved_on_replay_more():
    rows = [row(f"t@b#{q}", 5, 25) for q in range(8)]  # shift -20 from 25: 160 re-consumed
    planned = effect.planned(rows)
    assert effect.moved(planned) == (160, 0)
    now = effect.recomputed(rows, "shift", dict.fromkeys(planned, 88), {})
    assert effect.moved(now) == (664, 0)
    assert effect.change(planned, now).startswith("the effect changed since the preview: 160 → 664 re-consumed")


def test_within_the_tolerance_the_larger_of_percent_and_messages():
    rows = [row("t@b#0", 0, 2000)]  # 2,000 re-consumed: 10 % is 200, more than 100
    planned = effect.planned(rows)
    assert effect.change(planned, effect.recomputed(rows, "earliest", {"t@b#0": 2200}, {})) is None
    assert "2000 → 2201" in effect.change(planned, effect.recomputed(rows, "earliest", {"t@b#0": 2201}, {}))
    small = [row("t@b#0", 0, 10)]  # 10 re-consumed: the 100-message floor applies
    assert effect.change(effect.planned(small), effect.recomputed(small, "earliest", {"t@b#0": 110}, {})) is None
    assert effect.change(effect.planned(small), effect.recomputed(small, "earliest", {"t@b#0": 111}, {}))


def test_opposite_moves_on_two_queues_do_not_cancel_out():
    rows = [row("t@b#0", 50, 100), row("t@b#1", 50, 100)]  # 100 re-consumed
    now = effect.recomputed(rows, "exact", {"t@b#0": 200, "t@b#1": 0}, {})
    assert effect.moved(now) == (150, 50)
    assert "200 messages apart" in effect.change(effect.planned(rows), now)


def test_latest_is_measured_against_the_end_of_each_queue_now():
    rows = [row("t@b#0", 1000, 900, maximum=1000)]  # 100 skipped when previewed
    now = effect.recomputed(rows, "latest", {"t@b#0": 900}, {"t@b#0": 1500})
    assert effect.moved(now) == (0, 600) and "100 → 600 skipped" in effect.change(effect.planned(rows), now)


def test_queues_left_alone_or_never_committed_count_nothing():
    rows = [row("t@b#0", None, 10), row("t@b#1", 0, None)]
    assert effect.planned(rows) == {"t@b#1": None}
    assert effect.change(effect.planned(rows), effect.recomputed(rows, "earliest", {}, {})) is None
