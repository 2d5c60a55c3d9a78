"""The worker as production runs it: `celery -A dashboard worker` with the default prefork pool,
which enforces time limits (the threads pool ignores them). With the global limit lowered to 3 s
soft / 4 s hard, an approved redrive that takes about 8 s finishes: the approval's task only
queues the job's own task, which has REDRIVE_TIME_LIMIT. Before, the job ran inside the change
task (CHANGE_RUN_TIME_LIMIT) and was cut off; here that limit is lowered too, to show it is not
the one that applies. Oracle: the target topic read back from the broker, and the database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from consumers.changes.models import ChangeRequest
from consumers.dlq.models import RedriveJob
from tests.dlq.test_dlq import fill_dlq, target_messages

pytestmark = pytest.mark.broker

TOTAL, RATE = 200, 25  # about 8 s of sending, twice the worker's global hard limit

PLAN_AND_APPROVE = """
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from consumers.changes.services import decide
from consumers.changes.guards import Actor
from consumers.dlq import redrive
from consumers.dlq.browse import Selection
from consumers.models import Cluster
from consumers.identity import create_or_update_user
cluster = Cluster.objects.create(name="prefork", namesrv_addrs=sys.argv[1])
operator = create_or_update_user("op", "operator", "a-long-enough-password-1")
approver = create_or_update_user("ap", "approver", "a-long-enough-password-2")
job = redrive.plan_redrive(actor=Actor(operator), cluster=cluster, group=sys.argv[2], selection=Selection(),
                           target="topic", target_topic=sys.argv[3], rate=int(sys.argv[4]), reason="replay")
decide(job.change_request, "approve", actor=Actor(approver))  # queues execute_change once committed
print(job.pk, job.change_request_id)
"""


def approved_redrive_under_prefork(tmp_path: Path, mqadmin, namesrv, names, create_topic, redis_server, **limits):
    """Plan and approve a redrive of TOTAL messages at RATE, let a prefork worker run it with
    `limits` in its environment; (job state, request state, seconds, worker log, target topic)."""
    group, target = names.group("prefork"), create_topic(names.topic("prefork-target"))
    fill_dlq(mqadmin, namesrv, group, TOTAL)
    database = tmp_path / "prefork.sqlite3"
    broker = redis_server.url.rsplit("/", 1)[0] + "/7"  # a Redis database of its own: no other test's tasks
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "VAR_DIR": str(tmp_path / "var"),
        "REDIS_URL": broker,
        "DEBUG": "true",
        "REDRIVE_APPROVAL_THRESHOLD": "10",  # 200 messages need an approver
        **{name: str(value) for name, value in limits.items()},
    }
    (tmp_path / "var").mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--pool", "prefork", "-c", "2", "-l", "info"],
        env=environment, cwd=settings.BASE_DIR, stdout=open(tmp_path / "worker.log", "wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        code = "import sys\n" + PLAN_AND_APPROVE
        planned = subprocess.run([sys.executable, "-c", code, namesrv, group, target, str(RATE)], env=environment,
                                 cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=180)  # fmt: skip
        assert planned.returncode == 0, planned.stderr[-3000:]
        job_id, request_id = map(int, planned.stdout.split()[-2:])
        started = time.monotonic()

        def states() -> tuple[str, str]:
            with sqlite3.connect(database, timeout=10) as db:
                job = db.execute(f"SELECT state FROM {RedriveJob._meta.db_table} WHERE id = ?", (job_id,))
                request = db.execute(f"SELECT state FROM {ChangeRequest._meta.db_table} WHERE id = ?", (request_id,))
                return job.fetchone()[0], request.fetchone()[0]

        while states()[0] not in ("done", "failed", "cancelled") or states()[1] == "running":
            assert time.monotonic() - started < 120, (states(), (tmp_path / "worker.log").read_text()[-3000:])
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.5)
        elapsed = time.monotonic() - started
    finally:
        worker.terminate()
        worker.wait(30)
    return (*states(), elapsed, (tmp_path / "worker.log").read_text(), target)


def test_a_prefork_worker_finishes_an_approved_redrive_longer_than_the_global_limit(
    tmp_path: Path, mqadmin, namesrv, names, create_topic, redis_server
):
    global_limits = {"CELERY_TASK_SOFT_TIME_LIMIT": 3, "CELERY_TASK_TIME_LIMIT": 4, "CHANGE_RUN_TIME_LIMIT": 3}
    job, request, elapsed, log, target = approved_redrive_under_prefork(
        tmp_path, mqadmin, namesrv, names, create_topic, redis_server, **global_limits
    )
    assert "[prefork]" in log or "prefork" in log  # the pool it ran under, as the banner says
    assert (job, request) == ("done", "done"), log[-3000:]
    # How long the job sent, on the broker's clock: the test's own clock starts only once the
    # planning process has exited, and by then a quick worker has been sending for seconds.
    copies = target_messages(namesrv, target)
    stored = [m.store_timestamp for m in copies]
    assert len(copies) == TOTAL
    assert (max(stored) - min(stored)) / 1000 > 5, (elapsed, stored)  # longer than the global hard limit of 4 s
    assert "TimeLimitExceeded" not in log and "SoftTimeLimitExceeded" not in log


def test_a_redrive_longer_than_its_own_limit_is_handed_on_at_the_soft_limit_and_finishes_exactly_once(
    tmp_path: Path, mqadmin, namesrv, names, create_topic, redis_server
):
    """REDRIVE_TIME_LIMIT of 3 s for about 8 s of sends: each task stops at its soft limit and
    queues the job again from its checkpoint; none is killed at the hard limit mid-window."""
    job, request, elapsed, log, target = approved_redrive_under_prefork(
        tmp_path, mqadmin, namesrv, names, create_topic, redis_server, REDRIVE_TIME_LIMIT=3
    )
    assert (job, request) == ("done", "done"), log[-3000:]
    tasks = log.count("Task consumers.dlq.tasks.run_redrive[")  # one "received" line per task
    print(f"\n{elapsed:.1f} s for {TOTAL} messages at {RATE} msg/s with a 3 s task limit: {tasks} tasks")
    assert tasks >= 3 and log.count("SoftTimeLimitExceeded") == 0  # handled by the runner, not raised out
    assert "Hard time limit" not in log and "TimeLimitExceeded(" not in log
    copies = target_messages(namesrv, target)
    stored = [m.store_timestamp for m in copies]
    assert (max(stored) - min(stored)) / 1000 > 6, (elapsed, stored)  # sent across two task limits and more
    sources = Counter(m.properties["REDRIVE_SOURCE"] for m in copies)
    assert len(sources) == TOTAL and set(sources.values()) == {1}  # none lost, none sent twice
