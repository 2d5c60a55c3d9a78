"""Child processes that cannot outlive us: the local cluster's JVMs, redis-server, Celery.

Every child is started with PR_SET_PDEATHSIG = SIGKILL, so the kernel kills it when the
Python process that started it dies for any reason (a failed test, Ctrl-C, SIGKILL of
pytest). Graceful stops go to the child's own process group with SIGTERM, then SIGKILL
after a grace period. Children must be started from a thread that lives as long as they
should (the main thread): the death signal follows the thread that forked.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_live: list[ManagedProcess] = []
_handed_out: set[int] = set()
_lock = threading.Lock()


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setpgid(0, 0)


def dying_with_parent(executable: str, folder: Path) -> Path:
    """A launcher for a program that a script we start runs in the background (Keycloak's kc.sh
    runs java so): PR_SET_PDEATHSIG is not inherited across fork, so without it the program
    outlives the script when we die. The launcher sets it again (util-linux's setpriv) and
    execs the program: it dies with the script, which dies with us."""
    launcher = folder / f"{Path(executable).name}-dying-with-parent"
    launcher.write_text(f'#!/bin/sh\nexec setpriv --pdeathsig KILL -- "{executable}" "$@"\n')
    launcher.chmod(0o755)
    return launcher


class StartupError(RuntimeError):
    """A child did not become ready; the message carries the end of its log."""


class ManagedProcess:
    def __init__(
        self,
        name: str,
        args: list[str],
        *,
        log_path: Path,
        cwd: Path | None = None,
        env=None,
        stdin=None,
        pipe_stdout: bool = False,
        user: str | None = None,
    ):
        self.name = name
        self.args = args
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # closed in stop()
        self.popen = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipe_stdout else self._log,
            stderr=self._log if pipe_stdout else subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            user=user,
        )
        with _lock:
            _live.append(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_for_log(self, marker: str, timeout: float) -> None:
        """Wait until `marker` appears in the log; fail fast if the process dies."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.log_path.read_text(errors="replace"):
                return
            if not self.alive():
                raise StartupError(f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}")
            time.sleep(0.1)
        raise StartupError(f"{self.name} not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise StartupError(f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(Exception):
                if check():
                    return
            time.sleep(0.1)
        raise StartupError(f"{self.name}: {what} not true after {timeout:.0f}s:\n{self.log_tail()}")

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signum)

    def stop(self, grace: float = 20.0) -> int | None:
        """SIGTERM the process group, SIGKILL it after `grace` seconds; returns the exit code."""
        if self.alive():
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.popen.wait(10)
        self.signal(signal.SIGKILL)  # anything the child left in its group
        self._log.close()
        with _lock:
            if self in _live:
                _live.remove(self)
        return self.popen.returncode


def stop_all(grace: float = 10.0) -> None:
    with _lock:
        live = list(reversed(_live))
    for process in live:
        process.stop(grace)


atexit.register(stop_all)


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pin_process_group(pgid: int, cpus: set[int]) -> int:
    """Bind every thread of every process in a process group (a ManagedProcess's pid) to
    `cpus`; returns how many threads. Benchmarks use it to give a broker and a client CPUs of
    their own, as on separate hosts. Threads started later inherit their creator's binding."""
    bound = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # state, ppid, pgrp
                continue
            for tid in os.listdir(f"/proc/{entry}/task"):
                os.sched_setaffinity(int(tid), cpus)
                bound += 1
        except (FileNotFoundError, ProcessLookupError):
            continue  # gone meanwhile
    return bound


def low_priority(command: list[str]) -> list[str]:
    """`command` run at the lowest CPU and I/O priority. For builds the tests wait on (helm,
    the images' base and layers): on two cores they otherwise starve the browser and cluster
    tests running beside them into their timeouts, which CI saw; niced, they take idle time."""
    prefix = ["nice", "-n", "19"]
    if shutil.which("ionice"):
        prefix += ["ionice", "-c", "3"]
    return prefix + command


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def port_block() -> tuple[int, int]:
    """The ports `free_port` hands out, [floor, ceiling): FREE_PORTS ("low-high") when set, so
    that test runs side by side each take a block of their own, cut below the ephemeral range."""
    low, _ = _ephemeral_range()
    floor, ceiling = 10000, max(low, 12000)
    if os.environ.get("FREE_PORTS"):
        floor, high = map(int, os.environ["FREE_PORTS"].split("-"))
        ceiling = min(high + 1, ceiling)
    return floor, ceiling


def free_port(*, also_free: tuple[int, ...] = (), start: int | None = None) -> int:
    """A free loopback port P such that P + each offset in `also_free` is free too (a broker
    uses P, P-2 and P+1). Ports handed out before are skipped even if not bound yet.

    Ports come from below the kernel's ephemeral range: a port in that range can be taken as the
    local end of any outgoing connection while its server is down, and a broker killed and
    started again then fails with "Address already in use" (seen on CI for a broker's HA port)."""
    floor, ceiling = port_block()
    base = start or floor + (os.getpid() * 7) % (ceiling - floor - 200)
    with _lock:
        for candidate in [*range(base, ceiling - 200), *range(floor, base)]:
            ports = {candidate} | {candidate + offset for offset in also_free}
            if ports & _handed_out:
                continue
            if all(max(floor, 1025) <= p < ceiling and port_is_free(p) for p in ports):  # within the block
                _handed_out.update(ports)
                return candidate
    raise RuntimeError("no free port block found")
