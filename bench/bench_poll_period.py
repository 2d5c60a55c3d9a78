"""Poll period drift: real Celery beat and worker dispatching polls of one cluster; the time
between consecutive polls against the cluster's poll interval.

    python -m bench.bench_poll_period [--interval 5] [--polls 20]

The cluster's name server refuses connections, so each poll fails at once: only the
dispatch is measured, not the poll's own duration.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench.common import describe
from bench.django_env import setup_django
from devstack.processes import ManagedProcess, free_port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=int, default=5)
    parser.add_argument("--polls", type=int, default=20)
    args = parser.parse_args()
    base, redis = setup_django()
    from django.conf import settings

    from consumers.jobs.redis_client import get_redis
    from consumers.live import snapshots
    from consumers.models import Cluster

    cluster = Cluster.objects.create(
        name="period", namesrv_addrs=f"127.0.0.1:{free_port()}", poll_interval=args.interval
    )
    celery = [sys.executable, "-m", "celery", "-A", "dashboard"]
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    worker = ManagedProcess(
        "worker", [*celery, "worker", "--pool", "threads", "-c", "2", "-l", "warning"], log_path=base / "worker.log",
        cwd=settings.BASE_DIR, env=environment,
    )  # fmt: skip
    beat = ManagedProcess(
        "beat", [*celery, "beat", "-l", "warning"], log_path=base / "beat.log",
        cwd=settings.BASE_DIR, env=environment,
    )  # fmt: skip
    polls: list[float] = []
    try:
        deadline = time.monotonic() + (args.polls + 4) * args.interval + 60
        while len(polls) < args.polls + 1 and time.monotonic() < deadline:
            meta = snapshots.read_meta(get_redis(), cluster.pk)
            if meta and (not polls or meta.polled_at != polls[-1]):
                polls.append(meta.polled_at)
            time.sleep(0.05)
    finally:
        beat.stop(5)
        worker.stop(5)
        redis.stop()
    periods = [b - a for a, b in zip(polls, polls[1:], strict=False)]
    drift = [p - args.interval for p in periods]
    print(f"\nPoll period over {len(periods)} polls, interval {args.interval} s (beat ticks every 0.5 s)")
    print(f"  period   {describe(periods)} s")
    print(f"  mean drift {sum(drift) / len(drift):+.3f} s, worst single period {max(drift, key=abs):+.3f} s")


if __name__ == "__main__":
    main()
