"""Snapshot throughput: consume stats and connection lists for every group.

Measured in one run, on one local cluster with N groups (committed offsets on an 8-queue
topic):
- ours: consumers.rocketmq, all groups concurrently on one pipelined connection, routes
  cached (the warm-up round fills the cache; rounds after it are timed);
- ours, full snapshot: cluster_snapshot() as the poller runs it (adds cluster info, broker
  runtime info, the group list and min offsets);
- Java: DefaultMQAdminExt the way rocketmq-dashboard uses it, examineConsumeStats +
  examineConsumerConnectionInfo per group on a thread pool of 1, 4 and 16 threads;
- broker limit: the same requests pre-encoded, written raw and pipelined, answers only
  counted (no parsing): what the broker itself can do.

    python -m bench.bench_snapshot [--groups 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import time

from bench.common import prepare_groups, start_cluster
from consumers.rocketmq import AdminClient, ConsumerNotOnline, RocketMQError, cluster_snapshot
from consumers.rocketmq.codes import RequestCode, retry_topic
from consumers.rocketmq.frame import FrameDecoder, RemotingCommand, encode
from consumers.rocketmq.message import split_address
from devstack.runtime import ensure_runtime


async def ours(namesrv: str, groups: list[str], rounds: int) -> float:
    """The same work as the Java baseline: each group's route, its consume stats on every
    master of the route, its connection list from one of them."""
    async with AdminClient(namesrv, request_timeout=30, max_in_flight=1024) as client:
        timings = []
        for _ in range(rounds + 1):
            started = time.perf_counter()
            routes = await client.topology.topic_routes([retry_topic(g) for g in groups])
            masters = {g: routes[retry_topic(g)].master_addrs() for g in groups}
            stats, connections = await asyncio.gather(
                client.progress.consume_stats_many([(g, a) for g in groups for a in masters[g].values()]),
                client.progress.consumer_connections_many([(g, next(iter(masters[g].values()))) for g in groups]),
            )
            failed = [
                r for r in stats + connections if isinstance(r, RocketMQError) and not isinstance(r, ConsumerNotOnline)
            ]
            assert not failed, failed[:3]
            timings.append(time.perf_counter() - started)
        return min(timings[1:])


async def full_snapshot(namesrv: str, rounds: int) -> tuple[float, int]:
    async with AdminClient(namesrv, request_timeout=30, max_in_flight=1024) as client:
        timings, count = [], 0
        for _ in range(rounds + 1):
            started = time.perf_counter()
            snapshot = await cluster_snapshot(client, running_info=False)
            timings.append(time.perf_counter() - started)
            count = len(snapshot.groups)
        return min(timings[1:]), count


async def broker_limit(broker_addr: str, groups: list[str], rounds: int) -> float:
    frames = []
    opaque = 0
    for group in groups:
        for code in (RequestCode.GET_CONSUME_STATS, RequestCode.GET_CONSUMER_CONNECTION_LIST):
            opaque += 1
            frames.append(encode(RemotingCommand(code=code, opaque=opaque, ext_fields={"consumerGroup": group})))
    payload = b"".join(frames)
    host, port = split_address(broker_addr)
    timings = []
    for _ in range(rounds + 1):
        reader, writer = await asyncio.open_connection(host, port)
        decoder, answered = FrameDecoder(), 0
        started = time.perf_counter()
        writer.write(payload)
        while answered < len(frames):
            answered += len(decoder.feed(await reader.read(1 << 20)))
        timings.append(time.perf_counter() - started)
        writer.close()
    return min(timings[1:])


def java(namesrv: str, count: int, threads: str, rounds: int) -> list[dict]:
    runtime = ensure_runtime()
    command = runtime.java(
        "rmqconsole.harness.AdminBench",
        [namesrv, "bench-group-", str(count), threads, str(rounds)],
        home=runtime.lib_dir.parent / "bench-home",
        heap="512m",
        extra=["-Drmq.logback.configurationFile=rmq.tools.logback.xml"],
    )
    output = subprocess.run(command, capture_output=True, text=True, timeout=3600).stdout
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per measurement (best kept)")
    parser.add_argument("--repeats", type=int, default=3, help="the whole comparison, interleaved, this many times")
    parser.add_argument("--threads", default="1,4,16")
    args = parser.parse_args()
    n = args.groups
    cluster = start_cluster()
    repeats = []
    try:
        groups = prepare_groups(cluster, n)
        broker = next(iter(cluster.brokers.values())).address
        for repeat in range(args.repeats):
            # ours and Java alternate, so a slow spell of this shared machine hits both
            figures = {
                "ours": n / asyncio.run(ours(cluster.namesrv_addr, groups, args.rounds)),
                "full": asyncio.run(full_snapshot(cluster.namesrv_addr, args.rounds)),
                "raw": n / asyncio.run(broker_limit(broker, groups, args.rounds)),
                "java": java(cluster.namesrv_addr, n, args.threads, args.rounds),
            }
            best_java = max(r["groupsPerSecond"] for r in figures["java"])
            print(
                f"repeat {repeat + 1}: ours {figures['ours']:.0f} groups/s, best Java {best_java:.0f} groups/s, "
                f"ratio {figures['ours'] / best_java:.2f}x"
            )
            repeats.append(figures)
    finally:
        cluster.stop()
    best_ours = max(r["ours"] for r in repeats)
    full_seconds, seen = min((r["full"] for r in repeats), key=lambda f: f[0])
    best_raw = max(r["raw"] for r in repeats)
    java_best: dict[int, dict] = {}
    for figures in repeats:
        for result in figures["java"]:
            if (
                result["threads"] not in java_best
                or result["groupsPerSecond"] > java_best[result["threads"]]["groupsPerSecond"]
            ):
                java_best[result["threads"]] = result
    print(
        f"\nSnapshot throughput, {n} groups, best over {args.repeats} interleaved repeats of {args.rounds} rounds"
        " (groups/s, higher is better)"
    )
    rows = [("ours: consume stats + connection list", best_ours)]
    rows.append((f"ours: full cluster_snapshot ({seen} groups)", seen / full_seconds))
    for threads, result in sorted(java_best.items()):
        errors = f" [{result['errors']} errors]" if result["errors"] else ""
        rows.append((f"Java DefaultMQAdminExt, {threads} thread(s){errors}", result["groupsPerSecond"]))
    rows.append(("broker limit: raw pipelined, routes cached", best_raw))
    for label, rate in rows:
        print(f"  {label:<52} {rate:9.0f} groups/s   ({n / rate:.3f} s)")
    best_java = max(r["groupsPerSecond"] for r in java_best.values())
    worst_repeat = min(r["ours"] / max(j["groupsPerSecond"] for j in r["java"]) for r in repeats)
    print(
        f"\nours / best Java = {best_ours / best_java:.2f}x   (target: at least 2x; "
        f"lowest single-repeat ratio {worst_repeat:.2f}x)"
    )
    print(f"ours / broker limit = {best_ours / best_raw:.2f} of what the broker can answer")


if __name__ == "__main__":
    main()
