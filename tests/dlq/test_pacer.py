"""The redrive's rate limit on a simulated clock: a ceiling at every moment, with no unused time
carried forward, a few milliseconds late each time not adding up, shared by windows sending at
once."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from consumers.dlq.runner import Pacer


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.sends: list[tuple[float, int]] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def send(pacer: Pacer, clock: Clock, count: int) -> None:
    async def go():
        for _ in range(count // pacer.batch):
            await pacer.take(pacer.batch)
            clock.sends.append((clock.now, pacer.batch))

    asyncio.run(go())


def busiest_second(sends: list[tuple[float, int]]) -> int:
    # 1e-9: the simulated times are sums of floats (20 steps of 0.05 may come to 0.9999999999)
    return max(sum(n for t, n in sends if start - 1e-9 <= t < start + 1 - 1e-9) for start, _ in sends)


@pytest.mark.parametrize("idle", [0.0, 0.5, 10.0, 600.0])
def test_no_burst_after_a_pause_or_a_take_over(idle):
    """Before: the pacer averaged from the job's start, so after 10 s idle at 200 msg/s the next
    2,000 messages went at once (measured: 1,040 in 0.63 s after a resume)."""
    clock = Clock()
    pacer = Pacer(200, clock=clock, sleep=clock.sleep)
    send(pacer, clock, 400)
    clock.now += idle  # paused, taken over, or a slow look-up
    clock.sends.clear()
    started = clock.now
    send(pacer, clock, 1000)
    assert busiest_second(clock.sends) == 200  # the rate, nothing carried over from before
    assert clock.now - started >= (1000 - pacer.batch) / 200 - 1e-9  # 4.95 s at least: no catching up


def test_windows_sending_at_once_share_the_rate():
    clock = Clock()
    pacer = Pacer(100, clock=clock, sleep=clock.sleep)

    async def window():
        for _ in range(10):
            await pacer.take(pacer.batch)

    async def both():
        await asyncio.gather(window(), window())

    asyncio.run(both())
    # 20 batches of 5 at 100/s, from two windows: one after the other, 0.05 s apart, over 1 s
    assert pacer.next - 1000.0 == pytest.approx(20 * 5 / 100, abs=1e-9)
    assert clock.now - 1000.0 == pytest.approx(19 * 0.05, abs=1e-9)  # the last batch's start


def test_a_late_wake_up_moves_the_schedule_instead_of_bunching_two_batches():
    """Before: the next batch was due one batch's time after the late one was *due*, however
    late, so when a busy loop woke a sleeper 0.12 s late, the next batch went at the same
    instant (CI measured 220 messages in one second at 200 msg/s on the broker). Over half a
    batch's time late, the schedule starts again from when the batch went."""
    clock = Clock()
    late = [0.12]  # the fifth sleep overshoots once

    async def oversleeping(seconds: float) -> None:
        clock.now += seconds + (late.pop() if len(clock.sends) == 4 and late else 0.0)

    pacer = Pacer(200, clock=clock, sleep=oversleeping)
    send(pacer, clock, 1000)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(clock.sends)]
    assert not late and min(gaps) >= 0.05 - 1e-9  # each batch a batch's time after the previous one went
    assert busiest_second(clock.sends) == 200


def test_a_few_milliseconds_late_each_time_do_not_add_up():
    """Before: each batch counted from when it really went, so a loop waking every sleeper 10 ms
    late sent 200 msg/s at 167 (CI measured 166 with two cores at 100 %)."""
    clock, held = Clock(), []

    async def late(seconds: float) -> None:
        held.append(seconds)  # what the pacer asked for
        clock.now += seconds + 0.01

    pacer = Pacer(200, clock=clock, sleep=late)
    send(pacer, clock, 2000)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(clock.sends)]
    # by hand: the first batch at once, the other 199 each due 0.05 s after the one before and
    # going 0.01 s late: the last at 199 * 0.05 + 0.01 = 9.96 s, 200.8 msg/s over the sends
    assert clock.sends[-1][0] - clock.sends[0][0] == pytest.approx(9.96, abs=1e-9)
    assert min(gaps) >= 0.04 - 1e-9 and busiest_second(clock.sends) == 200
    assert sum(held) == pytest.approx(0.05 + 198 * 0.04, abs=1e-9)  # the second sleep is whole, then 0.04 each


def test_the_highest_rate_is_unthrottled(settings):
    clock = Clock()
    pacer = Pacer(settings.REDRIVE_MAX_RATE, clock=clock, sleep=clock.sleep)
    send(pacer, clock, 10 * pacer.batch)
    assert clock.now == 1000.0
