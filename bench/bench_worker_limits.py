"""Long jobs under the worker as deployed: `celery -A dashboard worker` with the default prefork
pool and the default limits (nothing lowered), on a cluster and a history of its own.

- An approved redrive of --messages (default 100,000) at --rate (default 2,000 msg/s): far more
  than the approval's task (CHANGE_RUN_TIME_LIMIT, 600 s at the old 100 msg/s default) or the
  global limit (300 s) would allow at a low rate. It must end `done`, with its request `done`,
  every message once on the target (the target's offsets and one record per source message).
- The nightly statistics of a synthetic --groups-group day (default 1,500), queued as the
  nightly task queues it and run by run_statistics with STATS_RUN_TIME_LIMIT.
The baseline printed next to each: the time the work needs at its own pace (messages / rate),
and the global task limit the job would have died under before.

    python -m bench.bench_worker_limits [--messages 100000] [--rate 2000] [--groups 1500] [--skip-stats]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.django_env import setup_django
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import dlq_topic
from consumers.rocketmq.models import Outgoing, TopicConfig
from devstack.rocketmq import LocalRocketMQ
from devstack.runtime import ensure_runtime
from devstack.synthetic_history import write_history

GROUP, TARGET = "bench-limits", "bench-limits-target"


async def fill(namesrv: str, count: int) -> None:
    async with AdminClient(namesrv, request_timeout=60) as client:
        masters = list((await client.topology.cluster_info()).masters().values())
        await client.actions.create_or_update_topic(TopicConfig(TARGET, 8, 8), masters)
        await client.actions.create_or_update_topic(TopicConfig(dlq_topic(GROUP), 1, 1), masters)
        for start in range(0, count, 5000):
            batch = [Outgoing(dlq_topic(GROUP), b'{"order": %d, "state": "failed"}' % i,
                              {"RETRY_TOPIC": "orders", "ORIGIN_MESSAGE_ID": f"o-{i}", "KEYS": f"k-{i}"},
                              unique_key=f"D{i:031X}") for i in range(start, min(count, start + 5000))]  # fmt: skip
            failed = [r for r in await client.actions.send_messages(batch) if isinstance(r, Exception)]
            assert not failed, failed[:3]


async def stored(namesrv: str, topic: str) -> int:
    async with AdminClient(namesrv) as client:
        route = await client.topology.topic_route(topic, max_age=0)
        total = 0
        for address in route.master_addrs().values():
            stats = await client.progress.topic_stats(topic, address)
            total += sum(o.max_offset - o.min_offset for o in stats.offsets.values())
        return total


def start_worker(base: Path) -> subprocess.Popen:
    """The README's worker command: prefork, the default limits (no CELERY_* in the environment)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")}
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--pool", "prefork", "-c", "2", "-l", "info"],
        env=environment, stdout=open(base / "worker.log", "wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def wait_for(condition, what: str, timeout: float, worker: subprocess.Popen, log: Path) -> float:
    started = time.monotonic()
    while not condition():
        if worker.poll() is not None or time.monotonic() - started > timeout:
            raise SystemExit(f"{what}: not reached in {timeout:.0f} s; worker log:\n{log.read_text()[-3000:]}")
        time.sleep(1)
    return time.monotonic() - started


def redrive(namesrv: str, messages: int, rate: int, worker: subprocess.Popen, log: Path) -> None:
    from django.conf import settings

    from consumers.changes.guards import Actor
    from consumers.changes.models import ChangeRequest
    from consumers.changes.services import decide
    from consumers.dlq import redrive as service
    from consumers.dlq.browse import Selection
    from consumers.dlq.models import RedriveJob, RedrivenMessage
    from consumers.identity import create_or_update_user
    from consumers.models import Cluster

    started = time.monotonic()
    asyncio.run(fill(namesrv, messages))
    print(f"DLQ filled with {messages:,} messages in {time.monotonic() - started:.0f} s", flush=True)
    cluster = Cluster.objects.create(name="limits", namesrv_addrs=namesrv)
    operator = create_or_update_user("bench-op", "operator", "a-long-enough-password-1")
    approver = create_or_update_user("bench-ap", "approver", "a-long-enough-password-2")
    job = service.plan_redrive(actor=Actor(operator), cluster=cluster, group=GROUP, selection=Selection(),
                               target="topic", target_topic=TARGET, rate=rate, reason="replay the outage")  # fmt: skip
    decide(job.change_request, "approve", actor=Actor(approver))  # queues execute_change, as the page does

    def ended() -> bool:
        job.refresh_from_db()
        return job.state not in ("awaiting-approval", "queued", "running")

    seconds = wait_for(ended, "the redrive", 4 * messages / rate + 600, worker, log)
    request = ChangeRequest.objects.get(pk=job.change_request_id)
    on_target = asyncio.run(stored(namesrv, TARGET))
    records = RedrivenMessage.objects.filter(job=job).count()
    print(f"approved redrive of {messages:,} at {rate:,} msg/s under prefork, default limits: job {job.state}, "
          f"request {request.state}, {seconds:.1f} s ({messages / seconds:,.0f} msg/s); at its own pace it needs "
          f"{messages / rate:.0f} s; the change task's limit is {settings.CHANGE_RUN_TIME_LIMIT} s and the global "
          f"one {settings.CELERY_TASK_SOFT_TIME_LIMIT} s")  # fmt: skip
    print(f"  on the target: {on_target:,} messages; records {records:,} (one per source message); "
          f"moved {job.moved:,}, failed {job.failed}, recovered {job.recovered}")  # fmt: skip
    assert (job.state, request.state, on_target, records) == (RedriveJob.State.DONE, "done", messages, messages)


def statistics(groups: int, worker: subprocess.Popen, log: Path) -> None:
    from django.conf import settings

    from consumers.models import Cluster
    from consumers.stats.runs import RunRequest, request_run
    from consumers.stats.tasks import run_statistics

    day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    started = time.monotonic()
    rows = write_history(Path(settings.HISTORY_URL), day, 1, cluster="stats", groups=groups, queues=16, interval=15,
                         seed=1, slow_hours=lambda _: (14, 15))  # fmt: skip
    print(f"synthetic day: {rows:,} queue rows of {groups:,} groups, written in {time.monotonic() - started:.0f} s",
          flush=True)  # fmt: skip
    Cluster.objects.create(name="stats", namesrv_addrs="127.0.0.1:1", poll_interval=15)
    run = request_run(RunRequest(day, day), trigger="nightly")
    run_statistics.delay(run.pk)  # what nightly_statistics does: it only queues

    def ended() -> bool:
        run.refresh_from_db()
        return run.state not in ("queued", "running")

    seconds = wait_for(ended, "the statistics run", settings.STATS_RUN_TIME_LIMIT + 300, worker, log)
    print(f"statistics of a {groups:,}-group day under prefork, default limits: {run.state} in {seconds:.0f} s "
          f"({rows / seconds:,.0f} rows/s), {run.input_rows:,} rows in, {run.output_rows:,} out; its limit "
          f"STATS_RUN_TIME_LIMIT {settings.STATS_RUN_TIME_LIMIT} s, the global one "
          f"{settings.CELERY_TASK_SOFT_TIME_LIMIT} s")  # fmt: skip
    assert run.state == "succeeded", run.error_tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=2_000)
    parser.add_argument("--groups", type=int, default=1_500)
    parser.add_argument("--skip-stats", action="store_true")
    parser.add_argument("--skip-redrive", action="store_true")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='bench-limits-db-')}/db.sqlite3"
    base, redis = setup_django()
    log = base / "worker.log"
    local = None
    worker = start_worker(base)
    try:
        if not args.skip_redrive:
            local = LocalRocketMQ(ensure_runtime(), base_dir=Path(tempfile.mkdtemp(prefix="bench-limits-"))).start()
            redrive(local.namesrv_addr, args.messages, args.rate, worker, log)
        if not args.skip_stats:
            if local is not None:
                local.stop()  # the broker's CPU and memory are the statistics' now
                local = None
            statistics(args.groups, worker, log)
    finally:
        worker.terminate()
        worker.wait(60)
        if local is not None:
            local.stop()
        redis.stop()
    text = log.read_text()
    print(f"worker: prefork pool ({'prefork' in text}); hard time limit hit: {'TimeLimitExceeded' in text}")


if __name__ == "__main__":
    main()
