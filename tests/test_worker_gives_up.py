"""A worker with no broker for CELERY_BROKER_GIVE_UP_SECONDS exits with status 69 (EX_UNAVAILABLE),
so that systemd's Restart= starts it again, instead of living on doing nothing. Both ways it can
lose Redis: never had it (start), and had it then lost it (a real redis-server, SIGKILLed).
Real parts: `celery worker --pool prefork`, redis-server."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from dashboard.celery import EX_UNAVAILABLE
from devstack.processes import ManagedProcess, free_port
from devstack.redis import LocalRedis

pytestmark = pytest.mark.slow

GIVE_UP = 4


def start_worker(tmp_path: Path, redis_url: str, *, include: str = "") -> ManagedProcess:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'console.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_GIVE_UP_SECONDS": str(GIVE_UP),
    }
    # -l info: the worker says "ready." at that level
    command = [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "-P", "prefork", "-c", "1", "-l", "info"]
    command += ["--include", include] if include else []
    return ManagedProcess("worker", command, log_path=tmp_path / "worker.log", cwd=settings.BASE_DIR, env=environment)


def exit_code_within(worker: ManagedProcess, seconds: float) -> int | None:
    try:
        return worker.popen.wait(seconds)
    except Exception:
        return None
    finally:
        worker.stop(5)


def test_a_worker_that_never_reaches_its_broker_exits_69(tmp_path: Path):
    worker = start_worker(tmp_path, f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    started = time.monotonic()
    code = exit_code_within(worker, GIVE_UP + 60)
    assert code == EX_UNAVAILABLE, worker.log_tail()
    assert "giving up" in worker.log_tail(200)
    print(f"exited {code} after {time.monotonic() - started:.1f} s (give up after {GIVE_UP} s, start-up included)")


def test_a_worker_that_loses_its_broker_for_good_exits_69(tmp_path: Path):
    server = LocalRedis(tmp_path / "redis")
    worker = start_worker(tmp_path, server.url)
    try:
        worker.wait_for_log("ready.", 90)
        server.process.signal(signal.SIGKILL)
        lost = time.monotonic()
        code = exit_code_within(worker, GIVE_UP + 60)
    finally:
        server.stop()
    assert code == EX_UNAVAILABLE, worker.log_tail()
    print(f"exited {code} {time.monotonic() - lost:.1f} s after Redis was killed (give up after {GIVE_UP} s)")


def test_a_worker_whose_shutdown_fails_after_giving_up_still_exits_69(tmp_path: Path):
    """The shutdown after giving up raises (injected with --include): the status still says why."""
    server = LocalRedis(tmp_path / "redis")
    worker = start_worker(tmp_path, server.url, include="tests.support.failing_shutdown")
    try:
        worker.wait_for_log("ready.", 90)
        server.process.signal(signal.SIGKILL)
        code = exit_code_within(worker, GIVE_UP + 60)
    finally:
        server.stop()
    log = worker.log_path.read_text(errors="replace")  # the traceback comes a character a line
    assert code == EX_UNAVAILABLE, worker.log_tail()
    assert "giving up" in log and "no attribute 'connection_errors'" in log, worker.log_tail()


def test_a_worker_whose_shutdown_hangs_after_giving_up_still_exits_69(tmp_path: Path):
    """The shutdown after giving up is made to hang (the pool's stop never returns, injected with
    --include): the worker exits 69 anyway, SHUTDOWN_GRACE_SECONDS later, with its threads' stacks
    in the log to say where it hung, and no pool process is left behind."""
    from dashboard.celery import SHUTDOWN_GRACE_SECONDS

    server = LocalRedis(tmp_path / "redis")
    worker = start_worker(tmp_path, server.url, include="tests.support.hanging_shutdown")
    try:
        worker.wait_for_log("ready.", 90)
        children = _children(worker.popen.pid)
        assert children, "a prefork worker has pool processes"
        server.process.signal(signal.SIGKILL)
        lost = time.monotonic()
        code = exit_code_within(worker, GIVE_UP + SHUTDOWN_GRACE_SECONDS + 60)
    finally:
        server.stop()
    took = time.monotonic() - lost
    log = worker.log_tail(400)
    assert code == EX_UNAVAILABLE, log
    assert took >= GIVE_UP + SHUTDOWN_GRACE_SECONDS - 1, took
    assert "has not ended" in log and "_stop_that_hangs" in log, log  # the stacks name the hang
    left = [pid for pid in children if Path(f"/proc/{pid}").exists() and _state(pid) != "Z"]
    assert not left, f"pool processes left behind: {left}"
    print(f"exited {code} {took:.1f} s after Redis was killed (give up {GIVE_UP} s, grace {SHUTDOWN_GRACE_SECONDS} s)")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
