"""A full poll cycle: every group of a cluster read, lag seconds measured, health judged,
the snapshot written to Redis and appended to the history, as the Celery task runs it.

    python -m bench.bench_poll [--groups 1000,3000,10000] [--polls 4] [--proxy]

Several sizes are measured side by side in one run on one cluster (groups are added between
sizes), so the growth from one to the next is visible: time per stage, the polling process's
peak RSS during the polls of each size, and the Redis memory the cluster's keys take per group.

With --proxy a rocketmq-proxy (cluster mode) runs beside the brokers, and the same cluster is
polled twice over, alternately: as before, and with the proxy configured. No broker knows a
client of the benchmark's groups, so each poll also asks the proxy about them, within
ROCKETMQ_PROXY_GROUPS_PER_POLL in rotation (a proxy answers about 330 connection lists a second):
the cost of looking for gRPC clients, as a ratio against the plain poll of the same run.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import prepare_groups, start_cluster
from bench.django_env import setup_django

TARGETS = {1000: 3.0, 10000: 5.0}  # seconds; a 10,000-group poll within 12x a 1,000-group one


@dataclass
class Size:
    groups: int
    durations: list[float] = field(default_factory=list)
    proxied: list[float] = field(default_factory=list)
    stages: list[dict[str, float]] = field(default_factory=list)
    peak_rss: int = 0  # bytes, during this size's polls
    redis_bytes: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.durations[1:] or self.durations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1000", help="sizes, comma-separated, e.g. 1000,3000,10000")
    parser.add_argument("--polls", type=int, default=6)
    parser.add_argument("--proxy", action="store_true", help="also poll with a proxy configured")
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.groups.split(","))
    _, redis = setup_django()
    from consumers.jobs.redis_client import get_redis
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster

    cluster_process = start_cluster()
    proxy = None
    sizes = []
    try:
        with_proxy = None
        if args.proxy:
            from devstack.proxy import LocalProxy
            from devstack.runtime import ensure_runtime

            proxy = LocalProxy(
                ensure_runtime(),
                cluster_process.namesrv_addr,
                cluster_process.base_dir / "proxy",
                cluster=cluster_process.cluster,
            )
            proxy.start()
        created = 0
        for count in counts:
            prepare_groups(cluster_process, count, start=created)
            created = count
            # a new cluster row per size: its lag-time cache and health window start empty
            cluster = Cluster.objects.create(name=f"bench-{count}", namesrv_addrs=cluster_process.namesrv_addr)
            if proxy is not None:
                with_proxy = Cluster.objects.create(name=f"bench-proxy-{count}", proxy_addrs=proxy.remoting_address,
                                                    namesrv_addrs=cluster_process.namesrv_addr)  # fmt: skip
            size = Size(count)
            _reset_peak_rss()
            for i in range(args.polls):
                result = poll_cluster(cluster)
                assert result.status == "ok" and result.groups >= count, result
                size.durations.append(result.duration)
                size.stages.append(result.stages)
                label = "first (fills the lag-time cache)" if i == 0 else ""
                print(f"{count} groups, poll {i + 1}: {result.duration:.3f} s, {result.groups} groups {label}")
                print("   " + ", ".join(f"{name} {seconds:.3f}" for name, seconds in result.stages.items()))
                if with_proxy is not None:
                    result = poll_cluster(with_proxy)
                    assert result.status == "ok" and result.groups >= count, result
                    size.proxied.append(result.duration)
                    print(f"   with the proxy: {result.duration:.3f} s")
            size.peak_rss = _peak_rss()
            size.redis_bytes = _redis_bytes(get_redis(), cluster.pk)
            sizes.append(size)
    finally:
        if proxy is not None:
            proxy.stop()
        cluster_process.stop()
        redis.stop()
    _report(sizes)


def _reset_peak_rss() -> None:
    """Start this process's peak RSS (VmHWM) over from its current size (Linux: clear_refs 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # then the peak is the process's since it started, set-up included: still an upper bound


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _redis_bytes(redis, cluster_id: int) -> int:
    """What the cluster's keys take in Redis (MEMORY USAGE, every element counted)."""
    keys = list(redis.scan_iter(match=f"rmqc:{cluster_id}:*", count=1000))
    return sum(redis.memory_usage(k, samples=0) or 0 for k in keys)


def _report(sizes: list[Size]) -> None:
    print("\nFull poll incl. Redis write and history append, median of the polls after the first (s):")
    names = list(sizes[-1].stages[-1])
    print(f"  {'groups':<22}" + "".join(f"{s.groups:>10,}" for s in sizes))
    print(f"  {'poll':<22}" + "".join(f"{s.median:>10.3f}" for s in sizes))
    print(f"  {'worst':<22}" + "".join(f"{max(s.durations[1:] or s.durations):>10.3f}" for s in sizes))
    for name in names:
        row = [statistics.median(st.get(name, 0.0) for st in (s.stages[1:] or s.stages)) for s in sizes]
        print(f"    {name:<20}" + "".join(f"{v:>10.3f}" for v in row))
    print(f"  {'peak RSS (MiB)':<22}" + "".join(f"{s.peak_rss / 2**20:>10.0f}" for s in sizes))
    print(f"  {'Redis per group (KiB)':<22}" + "".join(f"{s.redis_bytes / s.groups / 1024:>10.2f}" for s in sizes))
    first = sizes[0]
    for size in sizes[1:]:
        print(f"  {first.groups:,} -> {size.groups:,} groups: x{size.groups / first.groups:.0f} the groups, "
              f"x{size.median / first.median:.1f} the time")  # fmt: skip
    for size in sizes:
        if size.proxied:
            plain, asked = size.median, statistics.median(size.proxied[1:] or size.proxied)
            verdict = "met" if asked / plain <= 1.2 else "NOT met"
            print(f"  {size.groups:,} groups with the proxy asked too: median {asked:.3f} s against {plain:.3f} s, "
                  f"ratio {asked / plain:.2f} (target: at most 1.20 -> {verdict})")  # fmt: skip
        target = TARGETS.get(size.groups)
        if target is not None:
            worst = max(size.durations[1:] or size.durations)
            print(f"  target at {size.groups:,} groups: at most {target} s -> {'met' if worst <= target else 'NOT met'}"
                  f" (worst {worst:.3f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
