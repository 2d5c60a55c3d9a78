"""A full poll cycle: every group of a cluster read, lag seconds measured, health judged,
the snapshot written to Redis and appended to the history, as the Celery task runs it.

    python -m bench.bench_poll [--groups 1000,3000,10000] [--polls 4] [--proxy] [--workers 2]

Several sizes are measured side by side in one run on one cluster (groups are added between
sizes), so the growth from one to the next is visible: time per stage, the polling process's
peak RSS during the polls of each size, and the Redis memory the cluster's keys take per group.

With --proxy a rocketmq-proxy (cluster mode) runs beside the brokers, and the same cluster is
polled twice over, alternately: as before, and with the proxy configured. No broker knows a
client of the benchmark's groups, so each poll also asks the proxy about them, within
ROCKETMQ_PROXY_GROUPS_PER_POLL in rotation (a proxy answers about 330 connection lists a second):
the cost of looking for gRPC clients, as a ratio against the plain poll of the same run.

With --workers N the same cluster is also polled as production polls it: the poll task sent to
`celery worker --pool prefork -c N` (a cluster of more than ROCKETMQ_POLL_PART_GROUPS groups then
read in parts by those processes, live/parts.py), timed from the task's sending to its documents
in Redis, against the in-process poll of the same size in the same run; with each worker
process's peak RSS, Redis's memory (after the polls, and its highest while they ran), and the
CPU seconds a poll took in the workers and in the brokers (on cores the broker shares, steadier
from run to run than the time a poll takes).
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import prepare_groups, seed_groups, start_cluster
from bench.django_env import setup_django

ADMIN_MADE = 1000  # groups made by admin calls; beyond, seeded into the brokers' configs
TARGETS = {1000: 3.0, 10000: 5.0}  # seconds; a 10,000-group poll within 12x a 1,000-group one


@dataclass
class Size:
    groups: int
    durations: list[float] = field(default_factory=list)
    proxied: list[float] = field(default_factory=list)
    stages: list[dict[str, float]] = field(default_factory=list)
    peak_rss: int = 0  # bytes, during this size's polls
    redis_bytes: int = 0
    pooled: list[float] = field(default_factory=list)  # through the workers: sent to published
    pool_rss: list[int] = field(default_factory=list)  # each worker process's peak
    # CPU seconds each poll through the workers took: the worker processes' (summed), the brokers'
    # JVMs'; on cores shared with the broker, more steady from run to run than the time taken
    pool_cpu: list[tuple[float, float]] = field(default_factory=list)
    redis_used: int = 0  # Redis's used_memory after them
    # its highest while they ran (sampled every 50 ms): a split poll's staged documents sit beside
    # the detail hash until the poll renames them over it
    redis_peak: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.durations[1:] or self.durations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1000", help="sizes, comma-separated, e.g. 1000,3000,10000")
    parser.add_argument("--polls", type=int, default=6)
    parser.add_argument("--proxy", action="store_true", help="also poll with a proxy configured")
    parser.add_argument("--workers", type=int, default=0, help="also poll through N prefork worker processes")
    parser.add_argument("--worker-polls", type=int, default=0,
                        help="polls through the workers (default --polls); figures from the last --polls of them, "
                             "once the window holds only the split polls' samples")  # fmt: skip
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
            # the first groups by admin calls, the rest written into the brokers' configs (seed_groups)
            made = min(count, ADMIN_MADE) if created == 0 else created
            if made > created:
                prepare_groups(cluster_process, made, start=created)
            if count > made:
                seed_groups(cluster_process, count, start=made)
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
            if args.workers:
                _poll_through_workers(cluster, size, max(args.polls, args.worker_polls), args.workers)
                size.pooled = size.pooled[-args.polls :]
            sizes.append(size)
    finally:
        if proxy is not None:
            proxy.stop()
        cluster_process.stop()
        redis.stop()
    _report(sizes)


def _poll_through_workers(cluster, size: Size, polls: int, workers: int) -> None:
    """The poll task sent `polls` times to a prefork pool of `workers` processes, one poll at a time."""
    import os
    import sys
    import tempfile
    import time

    from consumers.jobs.redis_client import get_redis
    from consumers.live import snapshots
    from consumers.live.tasks import poll_cluster as poll_task
    from devstack.processes import ManagedProcess

    log = Path(tempfile.mkdtemp(prefix="bench-workers-")) / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--pool", "prefork", "-c", str(workers)]
    pool = ManagedProcess("workers", [*command, "-l", "info"], log_path=log, env=dict(os.environ))
    redis = get_redis()
    try:
        pool.wait_for_log(" ready.", 120)
        brokers = [pid for pid in _children(os.getpid()) if b"BrokerStartup" in _cmdline(pid)]
        for i in range(polls):
            before = snapshots.read_meta(redis, cluster.pk)
            workers_cpu, brokers_cpu = _cpu_seconds([pool.pid, *_children(pool.pid)]), _cpu_seconds(brokers)
            sent = time.monotonic()
            poll_task.apply_async((cluster.pk,))
            while True:
                meta = snapshots.read_meta(redis, cluster.pk)
                published = meta and (before is None or meta.polled_at > before.polled_at)
                if published and not redis.exists(snapshots.key(cluster.pk, "lock")):  # and its task done
                    break
                size.redis_peak = max(size.redis_peak, int(redis.info("memory")["used_memory"]))
                time.sleep(0.05)
            size.pooled.append(time.monotonic() - sent)
            size.pool_cpu.append((_cpu_seconds([pool.pid, *_children(pool.pid)]) - workers_cpu,
                                  _cpu_seconds(brokers) - brokers_cpu))  # fmt: skip
            parts = meta.stages.get("parts read")
            how = f"parts read in {parts:.3f} s" if parts else "one process"
            print(f"{size.groups} groups through {workers} workers, poll {i + 1}: {size.pooled[-1]:.3f} s "
                  f"({meta.status}, {how}), {meta.groups} groups; CPU s: workers {size.pool_cpu[-1][0]:.1f}, "
                  f"brokers {size.pool_cpu[-1][1]:.1f}")  # fmt: skip
            print("   " + ", ".join(f"{name} {seconds:.3f}" for name, seconds in meta.stages.items()))
        size.pool_rss = [_peak_rss(pid) for pid in _children(pool.pid)]
        size.redis_used = int(redis.info("memory")["used_memory"])
    finally:
        pool.stop()


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError):
                continue
    return found


def _cpu_seconds(pids: list[int]) -> float:
    """The CPU time (user and system) these processes have used so far; a process gone since
    (a pool child replaced) no longer counts, so a poll's figure is at most an undercount."""
    import os

    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime and stime: fields 14 and 15 of stat
    return ticks / os.sysconf("SC_CLK_TCK")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _reset_peak_rss() -> None:
    """Start this process's peak RSS (VmHWM) over from its current size (Linux: clear_refs 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # then the peak is the process's since it started, set-up included: still an upper bound


def _peak_rss(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
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
    if any(s.pooled for s in sizes):
        print("\nThrough the prefork workers, sent to published (s), against the in-process poll above:")
        print(f"  {'median':<22}" + "".join(f"{statistics.median(s.pooled[1:] or s.pooled):>10.3f}" for s in sizes))
        print(f"  {'worst':<22}" + "".join(f"{max(s.pooled[1:] or s.pooled):>10.3f}" for s in sizes))
        print(f"  {'ratio to in-process':<22}" + "".join(
            f"{statistics.median(s.pooled[1:] or s.pooled) / s.median:>10.2f}" for s in sizes))  # fmt: skip
        for label, at in (("CPU s workers", 0), ("CPU s brokers", 1)):
            row = [statistics.median(c[at] for c in (s.pool_cpu[1:] or s.pool_cpu or [(0.0, 0.0)])) for s in sizes]
            print(f"  {label:<22}" + "".join(f"{v:>10.1f}" for v in row))
        print(f"  {'peak RSS a process':<22}" + "".join(f"{max(s.pool_rss or [0]) / 2**20:>9.0f}M" for s in sizes))
        print(f"  {'Redis used_memory':<22}" + "".join(f"{s.redis_used / 2**20:>9.0f}M" for s in sizes))
        print(f"  {'Redis peak in a poll':<22}" + "".join(f"{s.redis_peak / 2**20:>9.0f}M" for s in sizes))
        for size in sizes:
            if size.groups >= 50_000:
                median, worst = statistics.median(size.pooled[1:] or size.pooled), max(size.pooled[1:] or size.pooled)
                verdict = "met" if median <= 20 and worst <= 25 else "NOT met"
                print(f"  target at {size.groups:,} groups: median <= 20 s, worst <= 25 s -> {verdict}")
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
