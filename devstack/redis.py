"""A throwaway redis-server on 127.0.0.1 (the Debian package), for tests and the demo."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from urllib.parse import urlparse

from .processes import ManagedProcess, free_port


def redis_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class LocalRedis:
    def __init__(self, base_dir: Path, port: int | None = None):
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError("redis-server is not installed (Debian package redis-server)")
        self.port = port or free_port()
        base_dir.mkdir(parents=True, exist_ok=True)
        self.process = ManagedProcess(
            "redis-server",
            [
                executable,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(base_dir),
                "--daemonize", "no",
            ],
            log_path=base_dir / "redis.log",
        )  # fmt: skip
        self.process.wait_until(lambda: redis_answers("127.0.0.1", self.port), 30, "PING answered")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.stop(10)


def ensure_local_redis(url: str, base_dir: Path) -> LocalRedis | None:
    """Start redis-server for `url` if it points at this machine and nothing answers there.
    Returns the started server, or None when one was already running."""
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 6379
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"REDIS_URL {url} is not on this machine; start that Redis yourself")
    if redis_answers("127.0.0.1", port):
        return None
    return LocalRedis(base_dir, port)
