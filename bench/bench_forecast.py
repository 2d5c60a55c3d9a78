"""The drain forecast's cost on each poll: forecast() against the health evaluation it runs
beside (evaluate(), the baseline), on the same windows of samples, in the same run.

    python -m bench.bench_forecast [--groups 10000] [--polls 20] [--queues 4] [--lagging 1.0]

Each group has a full health window of polls (20 at the default 15 s interval and 300 s
window) and, for the `--lagging` share of groups (all by default: the worst case), `--queues`
lagging queues draining with some jitter; the others have no lag. Prints the seconds of each
and the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import time


def windows(groups: int, polls: int, queues: int, lagging: float = 1.0) -> list[list]:
    from consumers.live.health import Sample

    rng = random.Random(7)
    found = []
    for g in range(groups):
        behind = g < groups * lagging
        window, offsets, tops = [], [0] * queues, [10_000 if behind else 0] * queues
        for i in range(polls):
            for q in range(queues):
                offsets[q] += 150 + rng.randint(-20, 20)
                tops[q] += 100 + rng.randint(-20, 20)
            if not behind:
                tops = offsets[:]
            held = {
                f"T@broker-a#{q}": (offsets[q], tops[q] - offsets[q]) for q in range(queues) if tops[q] > offsets[q]
            }
            window.append(Sample(t=1000.0 + 15 * i, online=True, lag=sum(v[1] for v in held.values()),
                                 queues=held, consumed=sum(offsets)))  # fmt: skip
        found.append(window)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--lagging", type=float, default=1.0, help="the share of groups behind")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ.setdefault("DEBUG", "true")
    import django

    django.setup()
    from consumers.live.forecast import forecast
    from consumers.live.health import Thresholds, evaluate

    thresholds = Thresholds(window_seconds=300, min_samples=3, stall_seconds=60, min_lag=1, retry_rate_per_minute=10)
    data = windows(args.groups, args.polls, args.queues, args.lagging)
    started = time.perf_counter()
    for window in data:
        evaluate(window, thresholds)
    health = time.perf_counter() - started
    started = time.perf_counter()
    states = [forecast(window, thresholds).state for window in data]
    drain = time.perf_counter() - started
    drained, draining = states.count("DRAINED"), states.count("DRAINING")
    print(
        f"{args.groups} groups, {args.polls} polls: {draining} draining on {args.queues} queues, {drained} without lag"
    )
    print(f"health evaluation (baseline) {health:.2f} s; drain forecast {drain:.2f} s; ratio {drain / health:.2f}")


if __name__ == "__main__":
    main()
