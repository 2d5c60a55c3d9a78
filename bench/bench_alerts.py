"""Alert rule evaluation per poll of a large cluster: the time `evaluate_cluster` adds to a
poll of N groups with a handful of rules, in the steady state (nothing changes) and in a poll
where 1 % of the groups stop, against the health judgement of the same poll (the baseline,
measured in the same run: what every poll already does per group).

    python -m bench.bench_alerts [--groups 10000] [--polls 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.django_env import setup_django


def median_ms(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    _, redis = setup_django()
    from unittest import mock

    from consumers.alerts import evaluate
    from consumers.alerts.models import Alert, AlertRule, Channel
    from consumers.jobs.redis_client import get_redis
    from consumers.live import snapshots
    from consumers.live import window as windows
    from consumers.live.config import default_thresholds
    from consumers.live.health import evaluate as judge_health
    from consumers.models import Cluster
    from devstack.synthetic import group, publish

    try:
        cluster = Cluster.objects.create(name="bench", namesrv_addrs="127.0.0.1:9876")
        hook = Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/")
        for name, fields in {
            "stopped": {"condition": "state", "states": ["STOPPED", "STALLED"]},
            "expired": {"condition": "state", "states": ["OFFSET_EXPIRED"], "group_pattern": "g-0*"},
            "slow": {"condition": "lag_seconds", "threshold": 3600},
            "dead letters": {"condition": "dlq_rate", "threshold": 100},
            "brokers": {"condition": "broker_missing"},
            "cluster": {"condition": "cluster_degraded"},
        }.items():
            AlertRule.objects.create(name=name, **fields).channels.set([hook])
        with mock.patch("consumers.alerts.tasks.deliver.delay"), mock.patch("consumers.live.publish.announce"):
            docs = publish(cluster, get_redis(), [group(f"g-{i:05d}", lag=i % 97) for i in range(args.groups)])
        meta = snapshots.read_meta(get_redis(), cluster.pk)
        window = windows.read(get_redis(), cluster.pk, since=0)
        thresholds = default_thresholds()
        samples = {g: window.get(g, []) for g in docs}

        baseline = median_ms(lambda: [judge_health(samples[g], thresholds) for g in docs], args.polls)
        steady = median_ms(lambda: evaluate.evaluate_cluster(cluster, meta, docs, samples), args.polls)
        stopping = [g for i, g in enumerate(sorted(docs)) if i % 100 == 0]

        def a_poll_with_stops():
            Alert.objects.all().delete()
            for g in stopping:
                docs[g].health = {"state": "STOPPED", "findings": [{"state": "STOPPED", "evidence": "no client"}]}
            started = time.perf_counter()
            with mock.patch("consumers.alerts.tasks.deliver.delay"):
                outcome = evaluate.evaluate_cluster(cluster, meta, docs, samples)
            return time.perf_counter() - started, outcome

        changed = [a_poll_with_stops() for _ in range(max(1, args.polls // 2))]
        changed_ms = statistics.median(t for t, _ in changed) * 1000
        fired = changed[-1][1].fired
    finally:
        redis.stop()
    print(f"\nalert rules (6) evaluated per poll of {args.groups:,} groups (median of {args.polls})")
    print(f"  baseline: the poll's own health judgement  {baseline:8.1f} ms")
    print(f"  rules, nothing changes                      {steady:8.1f} ms  ({steady / baseline:.2f} x the baseline)")
    ratio = changed_ms / baseline
    print(f"  rules, {fired} alerts fire and notify        {changed_ms:8.1f} ms  ({ratio:.2f} x the baseline)")
    print(f"\ntarget: under 100 ms per poll of 10,000 groups: {steady:.0f} ms steady, "
          f"{changed_ms:.0f} ms with {fired} firing")  # fmt: skip


if __name__ == "__main__":
    main()
