"""Capture the thread stacks of a 20-client group end to end (the operator's POST to the
clustered page rendered), against the same stacks taken one client at a time with mqadmin
`consumerStatus -g G -i CLIENT -s` (its jstack option, in mqadmin's long-lived JVM: no JVM start
counted), in one run. The clients are the Java harness's, each blocked in its listener.

    python -m bench.bench_capture [--clients 20] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import start_cluster_with_clients
from bench.django_env import setup_django

GROUP, TOPIC = "G-capture", "T-capture"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    base, redis = setup_django()
    local, mqadmin, harness = start_cluster_with_clients(base)
    from django.test import Client

    from consumers.clients import services
    from consumers.identity import create_or_update_user
    from consumers.jobs.redis_client import get_redis
    from consumers.models import Cluster

    cluster = Cluster.objects.create(name="bench", namesrv_addrs=local.namesrv_addr)
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(create_or_update_user("op", "operator", "bench-password-123"))
    ours, theirs = [], []
    try:
        mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", TOPIC, "-r", "16", "-w", "16")  # a queue for each
        runs = [harness.consume(GROUP, TOPIC, mode="stalled", threads=2, instanceName=f"c{i}")
                for i in range(args.clients)]  # fmt: skip
        harness.produce(TOPIC, args.clients * 20)
        harness.wait_for(lambda: all(any(d["result"] == "held" for d in r.deliveries) for r in runs), 120,
                         "every client blocked")  # fmt: skip
        ids = [r.client_id for r in runs]
        for _ in range(args.rounds):
            services.capture_failed(get_redis(), cluster, GROUP)  # the rate limit is not what is measured
            started = time.perf_counter()
            page = browser.post(f"/groups/bench/{GROUP}/clients/stacks/")
            ours.append(time.perf_counter() - started)
            html = page.content.decode()
            assert page.status_code == 200 and f"on {args.clients} of {args.clients} client(s)" in html, html[:3000]
            started = time.perf_counter()
            for client_id in ids:
                # check=False: the stacks it prints hold the word Exception, which mqadmin.run takes for a failure
                answer = mqadmin.run("consumerStatus", "-g", GROUP, "-i", client_id, "-s", timeout=120, check=False)
                assert "TID:" in answer.out, answer.out[-2000:]
            theirs.append(time.perf_counter() - started)
    finally:
        harness.close()
        mqadmin.close()
        local.stop()
        redis.stop()
    print(f"\nStacks of a {args.clients}-client group, {args.rounds} rounds (s): median, worst")
    print(f"  console, one capture (request to rendered clusters)  {statistics.median(ours):6.2f}  {max(ours):6.2f}")
    print(f"  mqadmin consumerStatus -s, one client at a time       {statistics.median(theirs):6.2f}  "
          f"{max(theirs):6.2f}")  # fmt: skip
    print(f"  ratio (console / mqadmin, medians): {statistics.median(ours) / statistics.median(theirs):.2f}x")


if __name__ == "__main__":
    main()
