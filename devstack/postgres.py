"""A throwaway PostgreSQL server on 127.0.0.1 (Debian's postgresql package), for running the
test suite against the production database:

    python -m devstack.postgres -- python -m pytest -m "not broker"

starts a server in a temporary folder, runs the command with DATABASE_URL pointing at it,
and stops the server. PostgreSQL refuses to run as root, so as root it runs as `postgres`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .processes import ManagedProcess, free_port


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise RuntimeError(f"{name} not found: install the postgresql package")
    return found


class LocalPostgres:
    def __init__(self, base_dir: Path | None = None):
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="pg-"))
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        data = self.base / "data"
        if self.user:
            account = pwd.getpwnam(self.user)
            os.chown(self.base, account.pw_uid, account.pw_gid)
        subprocess.run(
            [_binary("initdb"), "-D", str(data), "-A", "trust", "-U", "console", "-E", "UTF8"],
            check=True,
            capture_output=True,
            user=self.user,
        )
        self.process = ManagedProcess(
            "postgres",
            [
                _binary("postgres"),
                "-D", str(data),
                "-p", str(self.port),
                "-k", str(self.base),
                "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off",
            ],
            log_path=self.base / "postgres.log",
            user=self.user,
        )  # fmt: skip
        self.process.wait_for_log("ready to accept connections", 60)

    @property
    def url(self) -> str:
        return f"postgres://console@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        self.process.stop(20)
        shutil.rmtree(self.base, ignore_errors=True)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1 :]
    server = LocalPostgres()
    try:
        return subprocess.run(command, env={**os.environ, "DATABASE_URL": server.url}).returncode
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
