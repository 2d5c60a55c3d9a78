"""Time from approval to a verified reset, for a 16-queue group (8 queues on each of two
brokers), online (a Java consumer holds the queues) and offline, over a few repeats.

    python -m bench.bench_reset_run [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

from bench.common import describe, start_cluster_with_clients
from bench.django_env import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base, redis = setup_django()
    local, mqadmin, harness = start_cluster_with_clients(base)
    from consumers.changes.workflow import Actor, approve
    from consumers.identity import create_or_update_user
    from consumers.models import Cluster
    from consumers.resets.execute import execute_reset
    from consumers.resets.services import request_reset

    operator = create_or_update_user("op", "operator", "bench-password-123")
    approver = create_or_update_user("ap", "approver", "bench-password-123")
    cluster = Cluster.objects.create(name="bench", namesrv_addrs=local.namesrv_addr)
    timings: dict[str, list[float]] = {"offline": [], "online": []}
    try:
        mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", "T-run", "-r", "8", "-w", "8")
        harness.produce("T-run", 160)
        for mode in ("offline", "online"):
            group = f"G-run-{mode}"
            consumer = harness.consume(group, "T-run")
            consumer.wait_acked(160)
            time.sleep(12)  # the first offset commit comes about 10 s after start
            if mode == "offline":
                consumer.stop()
            for i in range(args.repeats):
                strategy = "earliest" if i % 2 == 0 else "latest"
                request = request_reset(
                    actor=Actor(operator), cluster=cluster, group=group, params={"strategy": strategy}, reason="bench"
                )
                approve(request, actor=Actor(approver))
                started = time.perf_counter()
                done = execute_reset(request.pk)
                timings[mode].append(time.perf_counter() - started)
                assert done.state == "done" and len(done.plan["rows"]) == 16, (done.state, done.result)
            if mode == "online":
                consumer.stop()
    finally:
        harness.close()
        mqadmin.close()
        local.stop()
        redis.stop()
    print(f"\nApproval to verified done, 16 queues on two brokers, {args.repeats} resets each (s)")
    for mode, values in timings.items():
        print(f"  {mode:8} {describe(values)}")


if __name__ == "__main__":
    main()
