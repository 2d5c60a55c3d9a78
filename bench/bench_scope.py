"""What grants cost the groups list: the rows of a cluster's last poll (10,001 groups by
default, published through the production path into a throwaway Redis) read as a user who sees
everything (the baseline: no filter) and as a user whose grants cover a team's patterns, in the
same run. Prints each median and the ratio.

    python -m bench.bench_scope [--groups 10001] [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.django_env import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_001)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    _, redis_server = setup_django()
    try:
        run(args.groups, args.runs)
    finally:
        redis_server.stop()


def run(count: int, runs: int) -> None:
    from consumers.identity import EVERYTHING, Rule, Scope
    from consumers.jobs.redis_client import get_redis
    from consumers.live.selectors import group_rows
    from consumers.models import Cluster
    from devstack.synthetic import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    teams = ("payments", "orders", "billing", "shipping")
    publish(cluster, get_redis(), [group(f"{teams[i % 4]}-{i}", lag=i % 50) for i in range(count)])
    team = Scope((Rule("operator", ("east",), ("payments-*", "billing-1*")), Rule("viewer", ("e*",), ("orders-7?",))))

    def median_ms(scope) -> tuple[float, int]:
        times, rows = [], 0
        for _ in range(runs):
            started = time.perf_counter()
            rows = len(group_rows(get_redis(), [cluster], scope=scope))
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times), rows

    everything, all_rows = median_ms(EVERYTHING)
    scoped, team_rows = median_ms(team)
    print(f"group rows of {count:,} groups, median of {runs} runs")
    print(f"  sees everything (baseline)  {everything:8.1f} ms  {all_rows:,} rows")
    print(f"  a team's grants             {scoped:8.1f} ms  {team_rows:,} rows")
    print(f"  ratio team / baseline       {scoped / everything:8.2f}")


if __name__ == "__main__":
    main()
