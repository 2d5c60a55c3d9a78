"""A redrive worker killed with SIGKILL mid-window, then the task delivered again (what Celery's
late acknowledgement does): every selected message reaches the target exactly once.

The worker is a real child process running the task body against its own SQLite file, so the
kill lands wherever the process is: between a send and its record, mid-pipeline, mid-commit.
Oracle: the target topic's stored messages, read back from the broker."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from consumers.dlq.models import RedriveJob, RedrivenMessage
from tests.dlq.test_dlq import fill_dlq, target_messages

pytestmark = pytest.mark.broker

TOTAL = 1500
RATE = 400  # one window in flight at this rate; the second window takes about 1.2 s

PLAN = """
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from consumers.changes.workflow import Actor
from consumers.dlq import redrive
from consumers.dlq.browse import Selection
from consumers.models import Cluster
from consumers.identity import create_or_update_user
cluster = Cluster.objects.create(name="killed", namesrv_addrs=sys.argv[1])
operator = create_or_update_user("op", "operator", "a-long-enough-password-1")
job = redrive.plan_redrive(actor=Actor(operator), cluster=cluster, group=sys.argv[2], selection=Selection(),
                           target="topic", target_topic=sys.argv[3], rate=int(sys.argv[4]))
print(job.pk)
"""
WORK = """
import django; django.setup()
from consumers.dlq.tasks import run_redrive
print(run_redrive.run(int(sys.argv[1])))
"""


def child(code: str, *args) -> list[str]:
    return [sys.executable, "-c", "import sys\n" + code, *map(str, args)]


def test_a_worker_killed_mid_window_is_taken_over_and_sends_each_message_once(
    tmp_path: Path, mqadmin, namesrv, names, create_topic, redis_server
):
    group, target = names.group("sigkill"), create_topic(names.topic("sigkill-target"))
    fill_dlq(mqadmin, namesrv, group, TOTAL)
    database = tmp_path / "worker.sqlite3"
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "VAR_DIR": str(tmp_path / "var"),
        "REDIS_URL": redis_server.url,
        "SECRET_KEY": "worker-killed-" + "k" * 50,
        "DEBUG": "false",
        "REDRIVE_APPROVAL_THRESHOLD": str(TOTAL),
    }
    (tmp_path / "var").mkdir()
    planned = subprocess.run(child(PLAN, namesrv, group, target, RATE), env=environment,
                             cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert planned.returncode == 0, planned.stderr[-3000:]
    job_id = int(planned.stdout.split()[-1])
    jobs, records = RedriveJob._meta.db_table, RedrivenMessage._meta.db_table

    def moved() -> int:
        with sqlite3.connect(database, timeout=10) as db:
            return db.execute(f"SELECT moved FROM {jobs} WHERE id = ?", (job_id,)).fetchone()[0]

    worker = subprocess.Popen(child(WORK, job_id), env=environment,
                              cwd=settings.BASE_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while moved() == 0:  # the first window (1,024) is recorded
            assert worker.poll() is None and time.monotonic() < deadline, worker.stderr.read().decode()[-3000:]
            time.sleep(0.05)
        time.sleep(0.4)  # part of the second window is on the wire, none of it recorded
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    time.sleep(0.5)  # what the dead process had already handed to its sockets reaches the broker
    recorded_at_kill, stored_at_kill = moved(), len(target_messages(namesrv, target))
    assert worker.returncode == -signal.SIGKILL
    assert recorded_at_kill < stored_at_kill < TOTAL, (recorded_at_kill, stored_at_kill)  # killed mid-window

    environment["CHANGE_RUN_STALE_SECONDS"] = "0"  # the heartbeat of the dead worker is old at once
    again = subprocess.run(child(WORK, job_id), env=environment, cwd=settings.BASE_DIR,
                           capture_output=True, text=True, timeout=180)  # fmt: skip
    assert again.returncode == 0 and again.stdout.split()[-1] == "done", again.stderr[-3000:]

    stored = target_messages(namesrv, target)
    sources = Counter(m.properties["REDRIVE_SOURCE"] for m in stored)
    assert len(stored) == TOTAL and set(sources.values()) == {1}  # none lost, none sent twice
    with sqlite3.connect(database) as db:
        row = db.execute(f"SELECT moved, failed, recovered FROM {jobs} WHERE id = ?", (job_id,)).fetchone()
        # progress as on the broker: what the dead worker sent unrecorded was found there and counted
        assert row == (TOTAL, 0, stored_at_kill - recorded_at_kill)
        assert db.execute(f"SELECT COUNT(*) FROM {records} WHERE job_id = ?", (job_id,)).fetchone()[0] == TOTAL
