"""One external process per job (a statistics run's spark-submit, a report's chromium), which
dies with the worker that started it and is never run twice side by side.

- `launch` starts it in a process group of its own with PR_SET_PDEATHSIG = SIGKILL: the kernel
  kills it when the worker thread that forked it dies, whatever kills the worker (SIGKILL, the
  OOM killer, a hard time limit), instead of leaving it to init, still writing the job's output.
  The signal follows the forking thread: call it from the thread that waits (a Celery pool
  child's main thread).
- `run` records the process on the job's row (pid and start time, /proc/<pid>/stat field 22) in
  the transaction that checks the job is still the caller's (consumers/jobs/claims.py); a take-over
  waits for that transaction, so it either finds the process recorded or came first and nothing
  is launched. When the process ends, times out or the task is interrupted, its whole group is
  killed: what it left behind (JVM Python workers, chromium renderers) goes with it.
- `begin_attempt`, the first step of every run of a job, kills the group an earlier attempt
  recorded if that process still runs with the recorded start time (a later process that got
  the same pid is someone else's), then counts the attempt: logs and work folders are per attempt.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.db.models import F

from . import claims

PR_SET_PDEATHSIG = 1
# resolved here, not in the child: between fork and exec the child runs as little Python as it can
_prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
_SIGKILL = int(signal.SIGKILL)


class Superseded(RuntimeError):
    """The job was taken over by another worker: this one starts nothing more for it."""


class StillRunning(RuntimeError):
    """An earlier attempt's process did not die when killed: no second one is started beside it."""


@dataclass(frozen=True)
class Owner:
    """The claimed job a process runs for; its model has `process_pid` and `process_started`."""

    model: type
    pk: int
    token: str


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks after boot) of a process, None when there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()  # the name may hold ") "
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[19])  # fields 3 and 22


def start_time(pid: int) -> int | None:
    """The start time of a live process (a zombie has finished), None when there is none."""
    found = _stat(pid)
    return found[1] if found is not None and found[0] not in ("Z", "X") else None


def _die_with(parent: int):
    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, _SIGKILL)
        if os.getppid() != parent:  # the worker died before prctl: no signal would ever come
            os._exit(1)

    return preexec


def launch(args: list[str], **popen) -> subprocess.Popen:
    """Start `args` in a new process group that the kernel kills when this thread dies."""
    return subprocess.Popen(args, process_group=0, preexec_fn=_die_with(os.getpid()), **popen)


def stop(process: subprocess.Popen) -> None:
    """SIGKILL the process's group, then reap it. The leader is reaped last: until then its pid,
    the group's id, cannot go to another process."""
    if process.returncode is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _exited(pid: int) -> bool:
    # WNOWAIT: the leader stays a zombie, so stop() still kills the right group
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def run(owner: Owner | None, args: list[str], *, timeout: float, **popen) -> int:
    """Run the job's process to its end and return its exit code; SIGKILL its group at the end
    and on subprocess.TimeoutExpired or any exception (a Celery soft time limit). With an owner,
    the process is recorded on the job's row, or Superseded is raised and nothing starts."""
    process = None
    try:
        if owner is None:
            process = launch(args, **popen)
        else:
            with transaction.atomic():
                # a write first: it holds the row (PostgreSQL), the database (SQLite), until the
                # pid is committed, so a take-over's UPDATE waits and then finds it to kill
                if not claims.beat(owner.model, owner.pk, owner.token):
                    raise Superseded(f"{owner.model.__name__} #{owner.pk} was taken over; nothing started")
                process = launch(args, **popen)
                started = _stat(process.pid)[1]  # our unreaped child: /proc has it, even dead
                owner.model.objects.filter(pk=owner.pk).update(process_pid=process.pid, process_started=started)
        deadline = time.monotonic() + timeout
        delay = 0.001
        while not _exited(process.pid):
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(args, timeout)
            delay = min(delay * 2, 0.05)
            time.sleep(delay)
    finally:
        if process is not None:
            stop(process)
    return process.returncode


def kill_if_same(pid: int, started: int, *, timeout: float = 30.0) -> bool:
    """SIGKILL the process group of `pid` if that process runs and started at `started`; wait
    until it is gone. False when it was not running (or is another process with the pid)."""
    if start_time(pid) != started:
        return False
    for kill in (os.killpg, os.kill):  # its group (it leads one, see launch), and itself whatever its group
        with suppress(ProcessLookupError):
            kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while start_time(pid) == started:
        if time.monotonic() > deadline:
            raise StillRunning(f"the earlier attempt's process {pid} did not stop when killed")
        time.sleep(0.02)
    return True


def stop_recorded(model, pk: int) -> int | None:
    """Kill the process an earlier attempt of the job recorded, if it still runs; its pid if so."""
    pid, started = model.objects.values_list("process_pid", "process_started").get(pk=pk)
    return pid if pid is not None and started is not None and kill_if_same(pid, started) else None


def begin_attempt(model, pk: int, token: str) -> int:
    """The first step of a run of the job: the earlier attempt's process is killed, then this
    attempt is counted (1, 2, ...) and its number returned. Superseded: the job was taken over."""
    if not claims.beat(model, pk, token):  # not ours: the process recorded is the new owner's
        raise Superseded(f"{model.__name__} #{pk} was taken over")
    stop_recorded(model, pk)
    with transaction.atomic():
        if not model.objects.filter(pk=pk, run_token=token).update(attempt=F("attempt") + 1):
            raise Superseded(f"{model.__name__} #{pk} was taken over")
        return model.objects.values_list("attempt", flat=True).get(pk=pk)
