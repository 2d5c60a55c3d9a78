"""Django set up for a benchmark: throwaway VAR_DIR, history and Redis, migrated database."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from devstack.redis import LocalRedis


def setup_django(*, debug: bool = False) -> tuple[Path, LocalRedis]:
    base = Path(tempfile.mkdtemp(prefix="bench-django-"))
    redis = LocalRedis(base / "redis")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "VAR_DIR": str(base / "var"),
            "HISTORY_URL": str(base / "history"),
            "REDIS_URL": redis.url,
            "DEBUG": "true" if debug else "false",
            "SECURE_SSL_REDIRECT": "false",  # production settings, but plain HTTP on the loopback
            "SECRET_KEY": "bench-" + "x" * 50,
            "LOG_LEVEL": "WARNING",
        }
    )
    (base / "var").mkdir()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return base, redis
