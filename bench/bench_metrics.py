"""/metrics over a large site: the time to build one scrape and its size, with and without
per-queue series, against the read of the same groups from Redis that any page needs (the
baseline, measured in the same run).

    python -m bench.bench_metrics [--groups 10000] [--queues 16] [--scrapes 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.django_env import setup_django


def timed(function, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--queues", type=int, default=16)
    parser.add_argument("--scrapes", type=int, default=5)
    args = parser.parse_args()
    _, redis = setup_django()
    from django.conf import settings

    from consumers.jobs.redis_client import get_redis
    from consumers.live import selectors
    from consumers.metrics.views import exposition
    from consumers.models import Cluster
    from devstack.synthetic import group, publish

    try:
        cluster = Cluster.objects.create(name="bench", namesrv_addrs="127.0.0.1:9876")
        groups = [group(f"g-{i:05d}", lag=i % 97, queues=args.queues, online=i % 5 != 0, topic=f"topic-{i % 40}")
                  for i in range(args.groups)]  # fmt: skip
        publish(cluster, get_redis(), groups)
        redis_client = get_redis()
        baseline, _ = timed(
            lambda: selectors.with_summaries(redis_client, selectors.group_rows(redis_client, [cluster])), args.scrapes
        )
        plain, body = timed(exposition, args.scrapes)
        settings.METRICS_PER_QUEUE = True
        queued, queued_body = timed(exposition, max(1, args.scrapes // 2))
    finally:
        redis.stop()
    series = body.count(b"\n") - body.count(b"\n#")
    print(f"\n/metrics for {args.groups:,} groups of {args.queues} queues (median of {args.scrapes})")
    print(f"  baseline: the groups read from Redis   {baseline * 1000:8.0f} ms")
    print(f"  scrape                                 {plain * 1000:8.0f} ms  {len(body) / 1e6:6.1f} MB  "
          f"{series:,} series  ({plain / baseline:.1f} x the baseline)")  # fmt: skip
    print(f"  scrape with per-queue series           {queued * 1000:8.0f} ms  {len(queued_body) / 1e6:6.1f} MB  "
          f"({queued / baseline:.1f} x the baseline)")  # fmt: skip
    print(f"\ntarget: under 1 s and 20 MB without per-queue series: {plain:.2f} s, {len(body) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
