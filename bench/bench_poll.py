"""A full poll cycle: every group of a cluster read, lag seconds measured, health judged,
the snapshot written to Redis and appended to the history, as the Celery task runs it.

    python -m bench.bench_poll [--groups 1000] [--polls 6]
"""

from __future__ import annotations

import argparse
import statistics

from bench.common import prepare_groups, start_cluster
from bench.django_env import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=6)
    args = parser.parse_args()
    _, redis = setup_django()
    from consumers.live import snapshots
    from consumers.live.config import history_store
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster
    from consumers.redis_client import get_redis

    cluster_process = start_cluster()
    try:
        prepare_groups(cluster_process, args.groups)
        cluster = Cluster.objects.create(name="bench", namesrv_addrs=cluster_process.namesrv_addr)
        durations = []
        for i in range(args.polls):
            result = poll_cluster(cluster)
            assert result.status == "ok" and result.groups >= args.groups, result
            durations.append(result.duration)
            label = "first (fills the lag-time cache)" if i == 0 else ""
            print(f"poll {i + 1}: {result.duration:.3f} s, {result.groups} groups {label}")
        meta = snapshots.read_meta(get_redis(), cluster.pk)
        staged = history_store().read("queue_offsets", "bench").num_rows
    finally:
        cluster_process.stop()
        redis.stop()
    steady = durations[1:]
    print(f"\nFull poll of {args.groups} groups incl. Redis write and history append:")
    print(f"  median {statistics.median(steady):.3f} s, worst {max(steady):.3f} s, first {durations[0]:.3f} s")
    print(f"  history rows staged: {staged:,}; last poll status {meta.status}")
    print(f"target: at most 3 s -> {'met' if max(steady) <= 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
