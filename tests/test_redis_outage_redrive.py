"""Redis killed for 20 s while a real redrive runs (issue 44's fault, on the real stack): the
worker keeps its process, polls resume within two intervals of Redis returning, and the redrive
ends exactly once: every dead letter on the target once, none twice, the job and its request
done.

Real parts: the session's RocketMQ cluster (a DLQ of TOTAL messages, redriven to a topic at
RATE a second), redis-server keeping its data (append-only file; killed with SIGKILL and started
again on it), `celery worker --pool prefork` and `celery beat` with the console's Celery app, and
their SQLite database. Oracles: the target topic read back from the brokers (each dead letter's
REDRIVE_SOURCE once), the worker's process id, the cluster's poll meta in Redis."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import redis as redis_py

from consumers.changes.models import ChangeRequest
from consumers.dlq.models import RedriveJob
from consumers.live import snapshots
from devstack.processes import ManagedProcess, free_port
from tests.dlq.test_dlq import fill_dlq, target_messages
from tests.support.scenarios import wait
from tests.support.workers import console_environment
from tests.test_prefork_worker import PLAN_AND_APPROVE
from tests.test_redis_outage import _redis_keeping_data

pytestmark = [pytest.mark.slow, pytest.mark.broker]

TOTAL, RATE = 600, 20  # 30 s of sending: the outage falls in the middle
OUTAGE = 20.0
POLL_INTERVAL = 5


def test_a_redrive_running_through_a_redis_outage_ends_exactly_once_and_polls_resume(
    tmp_path: Path, mqadmin, namesrv, names, create_topic, settings
):
    group, target = names.group("outage-redrive"), create_topic(names.topic("outage-target"))
    fill_dlq(mqadmin, namesrv, group, TOTAL)
    port, folder = free_port(), tmp_path / "redis"
    folder.mkdir()
    server = _redis_keeping_data(folder, port)
    url = f"redis://127.0.0.1:{port}/0"
    database = tmp_path / "console.sqlite3"
    environment = console_environment(tmp_path, url, REDRIVE_APPROVAL_THRESHOLD="10")
    celery = [sys.executable, "-m", "celery", "-A", "dashboard"]
    command = [*celery, "worker", "--pool", "prefork", "-c", "2", "-n", "redrive@%h", "-l", "info"]
    worker = ManagedProcess("worker", command, log_path=tmp_path / "worker.log", cwd=settings.BASE_DIR, env=environment)
    beat = None
    try:
        worker.wait_for_log(" ready.", 120)
        pid = worker.pid
        code = "import sys\n" + PLAN_AND_APPROVE
        planned = subprocess.run([sys.executable, "-c", code, namesrv, group, target, str(RATE)], env=environment,
                                 cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=180)  # fmt: skip
        assert planned.returncode == 0, planned.stderr[-3000:]
        job_id, request_id = map(int, planned.stdout.split()[-2:])
        with sqlite3.connect(database, timeout=10) as db:  # polled every 5 s from now on
            db.execute("UPDATE consumers_cluster SET poll_interval = ?", (POLL_INTERVAL,))
            (cluster_id,) = db.execute("SELECT id FROM consumers_cluster").fetchone()
        beat = ManagedProcess("beat", [*celery, "beat", "-l", "info", "-s", str(tmp_path / "beat-schedule")],
                              log_path=tmp_path / "beat.log", cwd=settings.BASE_DIR, env=environment)  # fmt: skip

        def job() -> tuple[str, int, str]:
            with sqlite3.connect(database, timeout=10) as db:
                state, moved = db.execute(
                    f"SELECT state, moved FROM {RedriveJob._meta.db_table} WHERE id = ?", (job_id,)
                ).fetchone()
                (request,) = db.execute(
                    f"SELECT state FROM {ChangeRequest._meta.db_table} WHERE id = ?", (request_id,)
                ).fetchone()
                return state, moved, request

        wait(lambda: job()[1] > 0, 60, "the redrive moving messages")
        server.popen.send_signal(signal.SIGKILL)
        server.popen.wait()
        moved_at_kill = job()[1]
        time.sleep(OUTAGE)
        assert worker.alive() and worker.pid == pid, worker.log_tail()
        server = _redis_keeping_data(folder, port)  # back, with its data
        back_at = time.time()

        def polled_after() -> bool:
            meta = snapshots.read_meta(redis_py.Redis.from_url(url, socket_timeout=2), cluster_id)
            return meta is not None and meta.polled_at > back_at

        wait(polled_after, 60, "a poll after Redis returned")
        resumed = time.time() - back_at
        wait(lambda: job()[0] in ("done", "failed", "cancelled", "partial") and job()[2] != "running", 180,
             "the redrive's end")  # fmt: skip
        state, moved, request = job()
        print(f"\n  Redis down {OUTAGE:.0f} s once {moved_at_kill} of {TOTAL} had moved: a poll {resumed:.1f} s after "
              f"it returned; the redrive {state}, {moved} moved, request {request}")  # fmt: skip
        assert worker.alive() and worker.pid == pid, worker.log_tail()
        assert "Unrecoverable error" not in worker.log_path.read_text(errors="replace"), worker.log_tail()
        assert resumed <= 2 * POLL_INTERVAL
        assert (state, moved, request) == ("done", TOTAL, "done")
        sources = Counter(m.properties["REDRIVE_SOURCE"] for m in target_messages(namesrv, target))
        assert len(sources) == TOTAL and set(sources.values()) == {1}  # none lost, none sent twice
    finally:
        for process in (worker, beat):
            if process is not None:
                process.stop(10)
        server.stop()
