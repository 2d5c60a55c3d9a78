"""The settings module: strict environment parsing, loud in production."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings


def load_settings(env: dict) -> subprocess.CompletedProcess:
    code = "import dashboard.settings as s; print(s.DEBUG, s.DATABASES['default']['ENGINE'], s.REDIS_URL)"
    clean = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **env}
    return subprocess.run(
        [sys.executable, "-c", code], env=clean, capture_output=True, text=True, cwd=settings.BASE_DIR
    )


def test_no_environment_at_all_is_a_working_development_setup():
    result = load_settings({})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "django.db.backends.sqlite3", "redis://127.0.0.1:6379/0"]


def test_production_without_a_secret_key_refuses_to_start():
    result = load_settings({"DEBUG": "false"})
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr
    ok = load_settings({"DEBUG": "false", "SECRET_KEY": "x" * 50, "DATABASE_URL": "postgres://u:p@127.0.0.1/db"})
    assert ok.stdout.split()[:2] == ["False", "django.db.backends.postgresql"]


@pytest.mark.parametrize(("name", "value"), [("DEBUG", "maybe"), ("ROCKETMQ_POLL_INTERVAL", "soon")])
def test_malformed_values_are_errors(name, value):
    result = load_settings({name: value})
    assert result.returncode != 0 and name in result.stderr


def test_the_secret_may_come_from_a_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file-" + "y" * 40 + "\n")
    code = "import dashboard.settings as s; print(s.SECRET_KEY)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", "SECRET_KEY_FILE": str(secret), "DEBUG": "false"},
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
    )
    assert result.stdout.strip() == "from-a-file-" + "y" * 40


def test_celery_limits_fit_inside_the_visibility_timeout():
    longest = max(settings.CELERY_TASK_TIME_LIMIT, settings.ROCKETMQ_POLL_DEADLINE + 60)
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > longest
    assert not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)  # tests use a real worker, not eager mode


def test_every_environment_variable_read_is_documented_in_env_example():
    import re

    source = (settings.BASE_DIR / "dashboard" / "settings.py").read_text()
    names = set(re.findall(r'env_(?:str|bool|int|list|secret)\("([A-Z_]+)"', source))
    documented = set(re.findall(r"^#?\s*([A-Z_]+)=", (settings.BASE_DIR / ".env.example").read_text(), re.M))
    assert names <= documented, sorted(names - documented)
