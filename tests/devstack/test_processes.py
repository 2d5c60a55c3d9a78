"""Children of a dead test run die with it: no JVM outlives the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.broker

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from devstack.rocketmq import LocalRocketMQ
    from devstack.runtime import ensure_runtime
    cluster = LocalRocketMQ(ensure_runtime(), base_dir=Path(sys.argv[1])).start()
    print(" ".join(str(p.pid) for p in cluster.processes()), flush=True)
    time.sleep(600)
    """
)


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else ""
    return "State:\tZ" not in status


def test_killing_the_python_process_kills_its_jvms(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "cluster")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    pids = [int(p) for p in holder.stdout.readline().split()]
    assert len(pids) == 2 and all(alive(p) for p in pids)
    holder.send_signal(signal.SIGKILL)  # no atexit, no cleanup: only the kernel's death signal
    holder.wait()
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in pids)


@pytest.mark.parametrize("pid", [1, 2000, 2345, 4_000_000])  # the start of the search depends on the pid
def test_ports_handed_out_lie_below_the_ephemeral_range_so_no_outgoing_connection_takes_them(monkeypatch, pid):
    """A server killed and started again must find its port free: the kernel picks the local
    ports of outgoing connections from ip_local_port_range, so ours stay under it."""
    from devstack import processes

    monkeypatch.setattr(processes.os, "getpid", lambda: pid)
    low, _ = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    handed = [processes.free_port(also_free=(-2, 1)) for _ in range(20)]
    assert len(set(handed)) == 20
    assert all(1024 < port - 2 and port + 1 < low for port in handed)


def test_runs_side_by_side_take_ports_from_their_own_blocks(monkeypatch):
    from devstack import processes

    monkeypatch.setenv("FREE_PORTS", "20000-20999")
    handed = [processes.free_port(also_free=(-2, 1)) for _ in range(20)]
    assert len(set(handed)) == 20 and all(20000 <= port - 2 and port + 1 <= 20999 for port in handed)


BACKGROUND = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from devstack.processes import ManagedProcess, dying_with_parent
    folder = Path(sys.argv[1])
    # what Keycloak's kc.sh does with java: runs it in the background and waits for it
    script = folder / "kc.sh"
    script.write_text('#!/bin/sh\\n"$JAVA" 600 & echo $! > "$1"; wait\\n')
    script.chmod(0o755)
    launcher = dying_with_parent("/bin/sleep", folder)
    ManagedProcess("script", [str(script), str(folder / "pid")], log_path=folder / "log",
                   env={"JAVA": str(launcher), "PATH": "/usr/bin:/bin"})
    while not (folder / "pid").exists() or not (folder / "pid").read_text().strip():
        time.sleep(0.05)
    print((folder / "pid").read_text().strip(), flush=True)
    time.sleep(600)
    """
)


def test_a_program_a_script_runs_in_the_background_dies_with_us_too(tmp_path):
    """kc.sh runs Keycloak's JVM in the background: the death signal does not pass a fork, so
    the launcher sets it again. Without it the program outlived a killed test session."""
    holder = subprocess.Popen([sys.executable, "-c", BACKGROUND, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    try:
        pid = int(holder.stdout.readline())
        # the shell printed the pid when it forked: the program is there once the child has exec'd
        deadline = time.monotonic() + 10
        while not _command_line(pid).startswith(b"/bin/sleep") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(pid) and _command_line(pid).startswith(b"/bin/sleep")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pid)
