"""The drain forecast (consumers/live/forecast.py) on hand-worked series."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consumers.live.forecast import (
    DRAINED,
    DRAINING,
    GROWING,
    NOT_DRAINING,
    SHRINKING,
    STEADY,
    UNKNOWN,
    _idle,
    _one_pass,
    _rates,
    after_reset,
    change_point,
    fit,
    forecast,
)
from consumers.live.health import Sample, Thresholds

Q0, Q1 = "orders@broker-a#0", "orders@broker-a#1"
THRESHOLDS = Thresholds(window_seconds=300, min_samples=3, stall_seconds=60, min_lag=1, retry_rate_per_minute=10)


def samples(*polls: tuple[float, dict[str, tuple[int, int]]]) -> list[Sample]:
    """(t, {queue: (committed offset, max offset)}) per poll, as the poll keeps them (lagging
    queues only, with their lag)."""
    found = []
    for t, queues in polls:
        lagging = {q: (offset, top - offset) for q, (offset, top) in queues.items() if top > offset}
        found.append(Sample(t=t, online=True, lag=sum(lag for _, lag in lagging.values()), queues=lagging))
    return found


def test_a_queue_consumed_at_20_and_fed_at_10_per_second_drains_its_550_in_55_seconds():
    drain = forecast(
        samples(*((t, {Q0: (20 * t, 1000 + 10 * t)}) for t in (0, 15, 30, 45))),
        THRESHOLDS,
    )
    assert (drain.state, drain.seconds, drain.low, drain.high, drain.queue) == (DRAINING, 55.0, 55.0, 55.0, Q0)
    (queue,) = drain.queues
    assert (queue.lag, queue.consume_rate, queue.produce_rate, queue.points) == (550, 20.0, 10.0, 4)
    assert drain.trend == SHRINKING


def test_the_band_is_two_standard_errors_of_the_fitted_drain_rate():
    # lag 100, 92, 78, 70 at 0, 10, 20, 30 s (max offset 1000): slope -1.04/s; residuals -0.6,
    # 1.8, -1.8, 0.6 (sum of squares 7.2); se = sqrt(7.2 / 2 / 500) = 0.0848528
    polls = ((0, 900), (10, 908), (20, 922), (30, 930))
    drain = forecast(samples(*((t, {Q0: (offset, 1000)}) for t, offset in polls)), THRESHOLDS)
    assert drain.state == DRAINING
    assert drain.seconds == pytest.approx(70 / 1.04, abs=0.05)
    assert drain.low == pytest.approx(70 / (1.04 + 2 * 0.0848528), abs=0.05)
    assert drain.high == pytest.approx(70 / (1.04 - 2 * 0.0848528), abs=0.05)
    assert fit([(0, 100), (10, 92), (20, 78), (30, 70)]).se == pytest.approx(0.0848528, rel=1e-6)


def test_production_50_against_consumption_30_is_not_draining_and_growing():
    drain = forecast(samples(*((t, {Q0: (30 * t, 200 + 50 * t)}) for t in (0, 15, 30))), THRESHOLDS)
    assert (drain.state, drain.seconds, drain.trend, drain.queue) == (NOT_DRAINING, None, GROWING, Q0)


def test_two_polls_are_not_enough_history():
    drain = forecast(samples((0, {Q0: (0, 100)}), (15, {Q0: (10, 100)})), THRESHOLDS)
    assert (drain.state, drain.seconds) == (UNKNOWN, None)
    assert drain.reason == "not enough history: 2 poll(s) of 3 needed"


def test_no_lagging_queue_is_drained():
    drain = forecast(samples((0, {Q0: (100, 100)})), THRESHOLDS)
    assert (drain.state, drain.seconds) == (DRAINED, 0.0)


def test_an_offset_that_went_back_starts_the_series_again():
    # a reset between 15 s and 30 s: only the three polls after it count (100 consumed in 30 s)
    polls = samples(
        (0, {Q0: (500, 1000)}), (15, {Q0: (600, 1000)}),
        (30, {Q0: (100, 1000)}), (45, {Q0: (150, 1000)}), (60, {Q0: (200, 1000)}),
    )  # fmt: skip
    drain = forecast(polls, THRESHOLDS)
    assert drain.queues[0].points == 3
    assert drain.seconds == pytest.approx(800 / (10 / 3))


def test_a_poll_that_could_not_read_the_group_is_skipped_not_a_break():
    polls = samples(*((t, {Q0: (20 * t, 1000)}) for t in (0, 15, 45)))
    polls.insert(2, Sample(t=30, online=None, lag=None, complete=False))
    assert forecast(polls, THRESHOLDS).queues[0].points == 3


def test_when_consumption_changes_only_the_stretch_since_is_judged():
    # 30/s against 50/s for 75 s, then 150/s: the whole window's fit would say about 18/s net
    before = [(t, {Q0: (30 * t, 50 * t + 20_000)}) for t in (0, 15, 30, 45, 60, 75)]
    after = [(75 + t, {Q0: (2250 + 150 * t, 23_750 + 50 * t)}) for t in (15, 30, 45, 60, 75, 90)]
    drain = forecast(samples(*before, *after), THRESHOLDS)
    lag_now = 23_750 + 50 * 90 - (2250 + 150 * 90)  # 12,500 at 100/s net
    assert drain.state == DRAINING
    assert drain.seconds == pytest.approx(lag_now / 100)
    assert drain.queues[0].consume_rate == pytest.approx(150)
    assert drain.queues[0].points in (6, 7)  # the poll at 75 s lies on both lines


def test_noise_alone_does_not_cut_the_series():
    # one rate (10/s net) with a poll's jitter of a few messages: every poll is judged
    jitter = [0, 3, -2, 4, -3, 1, -4, 2, 0, -1, 3, -2]
    polls = [(15 * i, {Q0: (10 * 15 * i + j, 50_000)}) for i, j in enumerate(jitter)]
    drain = forecast(samples(*polls), THRESHOLDS)
    assert drain.queues[0].points == len(jitter)
    assert drain.queues[0].consume_rate == pytest.approx(10, rel=0.01)


def test_the_slowest_queue_decides_and_a_growing_queue_makes_the_group_not_draining():
    drain = forecast(
        samples(*((t, {Q0: (10 * t, 100), Q1: (10 * t, 1000)}) for t in (0, 5, 10))),  # 100 s left on Q1
        THRESHOLDS,
    )
    assert (drain.state, drain.queue, drain.seconds) == (DRAINING, Q1, 90.0)
    drain = forecast(
        samples(*((t, {Q0: (10 * t, 100), Q1: (t, 1000 + 2 * t)}) for t in (0, 5, 10))),
        THRESHOLDS,
    )
    assert (drain.state, drain.queue) == (NOT_DRAINING, Q1)


def test_a_band_whose_slow_end_does_not_drain_has_no_upper_bound():
    # lag 100, 90, 99, 80 (both counters only grow): drains on average, but the spread includes
    # not draining
    polls = ((0, 900, 1000), (10, 915, 1005), (20, 916, 1015), (30, 940, 1020))
    drain = forecast(samples(*((t, {Q0: (offset, top)}) for t, offset, top in polls)), THRESHOLDS)
    assert drain.state == DRAINING
    assert drain.seconds is not None and drain.high is None


def test_a_lag_that_holds_still_is_steady():
    polls = samples(*((t, {Q0: (10 * t, 500 + 10 * t)}) for t in (0, 15, 30, 45)))
    drain = forecast(polls, THRESHOLDS)
    assert (drain.state, drain.trend) == (NOT_DRAINING, STEADY)


def test_a_queue_keeping_pace_at_a_lag_of_what_is_in_flight_is_caught_up_not_never():
    # 12.5/s produced and consumed; the committed offset trails by 1-2 messages (in flight, not
    # yet committed): 2 <= 12.5 x 10 s, and the lag does not grow
    polls = samples(*((t, {Q0: (int(12.5 * t), int(12.5 * t) + 1 + t // 15 % 2)}) for t in (0, 15, 30, 45)))
    drain = forecast(polls, THRESHOLDS)
    assert (drain.state, drain.seconds, drain.caught_up, drain.queue) == (DRAINED, 0.0, True, None)
    (queue,) = drain.queues
    assert (queue.seconds, queue.caught_up, queue.consume_rate) == (0.0, True, pytest.approx(12.5, rel=0.01))


def test_a_caught_up_queue_does_not_hide_a_draining_one_nor_a_stuck_lag_of_one():
    pace = {Q0: lambda t: (10 * t, 10 * t + 2)}
    draining = {Q1: lambda t: (20 * t, 1000 + 10 * t)}  # 550 left at 45 s, 10/s net: 55 s
    polls = samples(*((t, {q: f(t) for q, f in {**pace, **draining}.items()}) for t in (0, 15, 30, 45)))
    drain = forecast(polls, THRESHOLDS)
    assert (drain.state, drain.seconds, drain.queue, drain.caught_up) == (DRAINING, 55.0, Q1, False)
    # one message nobody takes: no consumption, so a lag of 1 is not "in flight"
    stuck = forecast(samples(*((t, {Q0: (500, 501)}) for t in (0, 15, 30, 45))), THRESHOLDS)
    assert (stuck.state, stuck.caught_up) == (NOT_DRAINING, False)
    # 20/s consumed, 10/s fed, 100 left: 5 s of consumption, in flight however it shrinks
    ending = forecast(samples(*((t, {Q0: (20 * t, 550 + 10 * t)}) for t in (15, 30, 45))), THRESHOLDS)
    assert (ending.state, ending.caught_up, ending.queues[0].lag) == (DRAINED, True, 100)
    # 10/s consumed, a lag of 200 that holds: 20 s of consumption, a backlog
    behind = forecast(samples(*((t, {Q0: (10 * t, 200 + 10 * t)}) for t in (0, 15, 30, 45))), THRESHOLDS)
    assert behind.state == NOT_DRAINING


def test_a_small_lag_that_grows_is_not_caught_up():
    # 10/s consumed, 11/s produced: 1, 16, 31, 46 behind (under 10 s of consumption, but growing)
    drain = forecast(samples(*((t, {Q0: (10 * t, 1 + 11 * t)}) for t in (0, 15, 30, 45))), THRESHOLDS)
    assert (drain.state, drain.caught_up, drain.trend) == (NOT_DRAINING, False, GROWING)


def test_a_lag_that_comes_and_goes_is_caught_up_on_what_the_queue_consumed_since_its_oldest_poll():
    # 12.5/s consumed; lag 1, none, 2, none, 1 at 0..60 s: never 3 polls in a row to fit, but the
    # committed offset went from 0 to 750 in 60 s (12.5/s): a lag of 1 is in flight
    lags = {0: 1, 15: 0, 30: 2, 45: 0, 60: 1}
    polls = samples(*((t, {Q0: (int(12.5 * t), int(12.5 * t) + lag)}) for t, lag in lags.items()))
    drain = forecast(polls, THRESHOLDS)
    assert (drain.state, drain.seconds, drain.caught_up, drain.reason) == (DRAINED, 0.0, True, None)
    (queue,) = drain.queues
    assert (queue.caught_up, queue.points, queue.consume_rate, queue.judged_seconds) == (True, 1, 12.5, 60.0)
    assert queue.produce_rate == 12.5  # max offsets 1 -> 751 over the same 60 s
    # a reset's preview drains a backlog put on it at those rates: 12.5 - 12.5 = 0, never
    plan = [{"label": Q0, "max": 751, "target": 0}]
    assert after_reset(plan, [queue.to_wire()])["state"] == NOT_DRAINING
    assert after_reset(plan, [{**queue.to_wire(), "produce_rate": None}])["state"] == UNKNOWN  # a rate not read


def test_a_burst_after_no_lag_and_a_queue_never_seen_lagging_stay_unjudged():
    # 10/s consumed, no lag at 30 s, then 500 behind at 45 s: 50 s of what it consumed, a backlog
    lags = {0: 1, 15: 2, 30: 0, 45: 500}
    burst = forecast(samples(*((t, {Q0: (10 * t, 10 * t + lag)}) for t, lag in lags.items())), THRESHOLDS)
    assert (burst.state, burst.caught_up) == (UNKNOWN, False)
    assert burst.queues[0].reason == "not enough history: 1 poll(s) of 3 needed"
    # no lag at all until the newest poll: nothing says what it consumes
    new = forecast(samples((0, {}), (15, {}), (30, {Q0: (300, 301)})), THRESHOLDS)
    assert (new.state, new.queues[0].reason) == (UNKNOWN, "not enough history: 1 poll(s) of 3 needed")
    # reset back between its older polls and now: only what it consumed since counts (1 in 15 s)
    reset = forecast(
        samples((0, {Q0: (900, 901)}), (15, {Q0: (100, 102)}), (30, {}), (45, {Q0: (101, 120)})), THRESHOLDS
    )
    assert reset.state == UNKNOWN


def test_polls_older_than_the_window_do_not_count():
    old = [(t, {Q0: (t, 10_000)}) for t in (0, 15, 30)]  # 1/s, long ago
    new = [(t, {Q0: (1000 + 100 * (t - 400), 10_000)}) for t in (400, 415, 430)]
    drain = forecast(samples(*old, *new), THRESHOLDS)
    assert drain.queues[0].points == 3
    assert drain.queues[0].consume_rate == pytest.approx(100)


def test_the_wire_form_rounds_and_names_the_state():
    wire = forecast(samples(*((t, {Q0: (20 * t, 1000 + 10 * t)}) for t in (0, 15, 30, 45))), THRESHOLDS).to_wire()
    assert wire == {"state": DRAINING, "seconds": 55.0, "low": 55.0, "high": 55.0, "trend": SHRINKING, "queue": Q0,
                    "reason": None, "caught_up": False}  # fmt: skip


def test_after_several_changes_the_newest_stretch_is_judged():
    # 30/s against 50/s, then nobody consumes for two polls (a consumer replaced), then 150/s
    polls, offset, top, t = [], 0, 20_000, 0
    for rate, count in ((30, 10), (0, 2), (150, 5)):
        for _ in range(count):
            t, offset, top = t + 3, offset + 3 * rate, top + 3 * 50
            polls.append((t, {Q0: (offset, top)}))
    drain = forecast(samples(*polls), THRESHOLDS)
    assert drain.queues[0].consume_rate == pytest.approx(150)
    assert drain.seconds == pytest.approx((top - offset) / 100)


def test_after_a_reset_each_queue_drains_its_new_lag_at_the_rate_its_consumers_showed():
    rows = [
        {"label": Q0, "max": 10_000, "target": 4_000},  # 6,000 to consume at 20 - 10 = 10/s: 600 s
        {"label": Q1, "max": 500, "target": 500},  # nothing left
    ]
    measured = [{"queue": Q0, "consume_rate": 20.0, "produce_rate": 10.0}]
    assert after_reset(rows, measured) == {"state": DRAINING, "seconds": 600.0, "queue": Q0, "unknown": 0}
    # a queue without a backlog now has no measured capacity: unknown, never a guess
    rows[1]["target"] = 0
    assert after_reset(rows, measured) == {"state": UNKNOWN, "seconds": None, "queue": None, "unknown": 1}
    slower = [{"queue": Q0, "consume_rate": 10.0, "produce_rate": 12.0}]
    assert after_reset(rows[:1], slower)["state"] == NOT_DRAINING
    assert after_reset([{"label": Q0, "max": 5, "target": 5}], measured)["state"] == DRAINED


def test_a_poll_that_read_only_part_of_the_group_still_counts_for_the_queues_it_read():
    # seen on the real cluster: the newest poll had a problem elsewhere (a proxy unreadable), so
    # its sample was incomplete; its queues were read all the same and are points
    polls = samples(*((t, {Q0: (20 * t, 5000), Q1: (20 * t, 5000)}) for t in (0, 15, 30, 45)))
    for poll in polls[2:]:
        poll.complete = False
    del polls[2].queues[Q1]  # Q1 unread at 30 s: neither a point nor a break
    drain = forecast(polls, THRESHOLDS)
    assert [q.points for q in drain.queues] == [4, 3]
    assert drain.state == DRAINING and drain.seconds == pytest.approx(4100 / 20)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 500), st.integers(0, 2_000)), min_size=0, max_size=24))
def test_the_one_pass_gives_the_rates_and_never_misses_a_cut(steps):
    """`_one_pass` against the functions it stands for, on series that move any way (offsets
    only ever grow within a series, times strictly): the same rates to the bit, and a cut
    flagged whenever change_point would cut."""
    series, t, o, m = [], 1.7e9, 10_000, 12_000
    for dt, consumed, produced in steps:
        t, o, m = t + 1 + dt, o + consumed, max(m + produced, o + consumed)
        series.append((t, o, m))
    rates, cut = _one_pass(series)
    assert rates == (_rates(series) if len(series) >= 3 else rates)
    if change_point([(t, m - o) for t, o, m in series]) != 0:
        assert cut


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=24), st.integers(0, 10**12), st.integers(1, 5_000))
def test_an_idle_queue_gets_the_one_pass_figures_without_its_sums(gaps, offset, lag):
    """A series where neither counter moves (an idle group's lagging queue): `_idle` gives what
    `_one_pass` gives, to the bit, and no cut."""
    series, t = [(1.7e9, offset, offset + lag)], 1.7e9
    for gap in gaps:
        t += gap
        series.append((t, offset, offset + lag))
    assert _idle(series) == _one_pass(series)[0] and _one_pass(series)[1] is False
    drain = forecast(samples(*((t, {Q0: (o, m)}) for t, o, m in series)), THRESHOLDS)
    if len(series) >= 3:  # judged: nothing consumed, nothing produced, not draining
        assert drain.state == NOT_DRAINING and drain.queues[0].consume_rate == drain.queues[0].produce_rate == 0
