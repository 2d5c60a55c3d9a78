"""A full poll cycle: every group of a cluster read, lag seconds measured, health judged,
the snapshot written to Redis and appended to the history, as the Celery task runs it.

    python -m bench.bench_poll [--groups 1000] [--polls 6] [--proxy]

With --proxy a rocketmq-proxy (cluster mode) runs beside the brokers, and the same cluster is
polled twice over, alternately: as before, and with the proxy configured. No broker knows a
client of the benchmark's groups, so each poll also asks the proxy about them, within
ROCKETMQ_PROXY_GROUPS_PER_POLL in rotation (a proxy answers about 330 connection lists a second):
the cost of looking for gRPC clients, as a ratio against the plain poll of the same run.
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
    parser.add_argument("--proxy", action="store_true", help="also poll with a proxy configured")
    args = parser.parse_args()
    _, redis = setup_django()
    from consumers.live import snapshots
    from consumers.live.config import history_store
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster
    from consumers.redis_client import get_redis

    cluster_process = start_cluster()
    proxy = None
    try:
        prepare_groups(cluster_process, args.groups)
        cluster = Cluster.objects.create(name="bench", namesrv_addrs=cluster_process.namesrv_addr)
        with_proxy = None
        if args.proxy:
            from devstack.proxy import LocalProxy
            from devstack.runtime import ensure_runtime

            proxy = LocalProxy(ensure_runtime(), cluster_process.namesrv_addr, cluster_process.base_dir / "proxy")
            proxy.start()
            with_proxy = Cluster.objects.create(
                name="bench-proxy", namesrv_addrs=cluster_process.namesrv_addr, proxy_addrs=proxy.remoting_address
            )
        durations, proxied, stages = [], [], []
        for i in range(args.polls):
            result = poll_cluster(cluster)
            assert result.status == "ok" and result.groups >= args.groups, result
            durations.append(result.duration)
            stages.append(result.stages)
            label = "first (fills the lag-time cache)" if i == 0 else ""
            print(f"poll {i + 1}: {result.duration:.3f} s, {result.groups} groups {label}")
            print("   " + ", ".join(f"{name} {seconds:.3f}" for name, seconds in result.stages.items()))
            if with_proxy is not None:
                result = poll_cluster(with_proxy)
                assert result.status == "ok" and result.groups >= args.groups, result
                proxied.append(result.duration)
                print(f"poll {i + 1} with the proxy: {result.duration:.3f} s")
        meta = snapshots.read_meta(get_redis(), cluster.pk)
        staged = history_store().read("queue_offsets", "bench").num_rows
    finally:
        if proxy is not None:
            proxy.stop()
        cluster_process.stop()
        redis.stop()
    if proxied:
        plain, asked = statistics.median(durations[1:]), statistics.median(proxied[1:])
        print(f"\nwith the proxy asked too: median {asked:.3f} s against {plain:.3f} s plain")
        print(f"  ratio {asked / plain:.2f} (target: at most 1.20 -> {'met' if asked / plain <= 1.2 else 'NOT met'})")
    steady = durations[1:]
    print(f"\nFull poll of {args.groups} groups incl. Redis write and history append:")
    print(f"  median {statistics.median(steady):.3f} s, worst {max(steady):.3f} s, first {durations[0]:.3f} s")
    print(f"  history rows staged: {staged:,}; last poll status {meta.status}")
    print("  per stage, median of the polls after the first (s):")
    for name in stages[-1]:
        print(f"    {name:<20} {statistics.median(s.get(name, 0.0) for s in stages[1:]):8.3f}")
    print(f"target: at most 3 s -> {'met' if max(steady) <= 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
