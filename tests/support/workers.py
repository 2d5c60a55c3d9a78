"""The console's own processes (Celery worker and beat, a set-up script) run apart from the test,
as production runs them: for the tests that kill Redis or a worker under them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

# creates the database and one cluster polled every `poll_interval` s; prints its id
SETUP = """
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from consumers.models import Cluster
print(Cluster.objects.create(name="outage", namesrv_addrs=sys.argv[1], poll_interval=int(sys.argv[2])).pk)
"""


def console_environment(tmp_path: Path, redis_url: str, **extra: str) -> dict[str, str]:
    """The environment of a console process of the test's own: its SQLite database
    (`tmp_path`/console.sqlite3), var directory and Redis, DEBUG off as in production."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'console.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
        "REDIS_URL": redis_url,
        "SECRET_KEY": "worker-tests-" + "k" * 50,
        "DEBUG": "false",
        **extra,
    }


def create_cluster(environment: dict[str, str], namesrv: str, poll_interval: int) -> int:
    """Migrate the environment's database and add a cluster there; its id."""
    command = [sys.executable, "-c", "import sys\n" + SETUP, namesrv, str(poll_interval)]
    setup = subprocess.run(command, env=environment, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=180)
    assert setup.returncode == 0, setup.stderr[-3000:]
    return int(setup.stdout.split()[-1])


def start_workers_and_beat(tmp_path: Path, environment: dict[str, str], name: str) -> tuple[list, object]:
    """Two `celery worker --pool prefork -c 1` (named `<name>1@…`, `<name>2@…`) and `celery beat`
    with the console's Celery app, logging under `tmp_path`."""
    from devstack.processes import ManagedProcess

    celery = [sys.executable, "-m", "celery", "-A", "dashboard"]
    workers = [
        ManagedProcess(
            f"worker-{n}",
            [*celery, "worker", "--pool", "prefork", "-c", "1", "-n", f"{name}{n}@%h", "-l", "info"],
            log_path=tmp_path / f"worker-{n}.log",
            cwd=settings.BASE_DIR,
            env=environment,
        )
        for n in (1, 2)
    ]
    return workers, start_beat(tmp_path, environment)


def start_beat(tmp_path: Path, environment: dict[str, str], name: str = "beat"):
    """`celery beat` with the console's Celery app and scheduler, logging to `tmp_path`/NAME.log."""
    from devstack.processes import ManagedProcess

    return ManagedProcess(name, [sys.executable, "-m", "celery", "-A", "dashboard", "beat", "-l", "info"],
                          log_path=tmp_path / f"{name}.log", cwd=settings.BASE_DIR, env=environment)  # fmt: skip
