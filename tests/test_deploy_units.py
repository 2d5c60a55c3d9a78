"""deploy/systemd/: the units for web, worker and beat are valid for systemd
(`systemd-analyze verify`, which also finds a command that is not there), and start what the
README says: `rocketmq-console serve` (gunicorn on dashboard.wsgi), `worker` (prefork), `beat`.
They are verified against the console as pip installs it (the wheel of tests/test_package.py),
where that command is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

UNITS = settings.BASE_DIR / "deploy" / "systemd"
NAMES = ["rocketmq-console-web.service", "rocketmq-console-worker.service", "rocketmq-console-beat.service"]


def _installed_here(unit: Path, tmp_path: Path, venv: Path) -> Path:
    """The unit as installed here: its virtualenv the test's, its env file this checkout's."""
    text = unit.read_text().replace("/srv/rocketmq-console/.venv", str(venv))
    text = text.replace("/etc/rocketmq-console.env", str(UNITS / "rocketmq-console.env"))
    installed = tmp_path / unit.name
    installed.write_text(text)
    return installed


@pytest.mark.parametrize("name", NAMES)
def test_each_unit_verifies_clean(name, tmp_path, installed_console):
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing (Debian package systemd)"
    unit = _installed_here(UNITS / name, tmp_path, installed_console.venv)
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    # verify exits 0 on some errors (a bad value is "ignored"): nothing printed is the test
    assert result.returncode == 0 and not result.stderr.strip() and not result.stdout.strip(), result.stderr


def test_a_unit_with_a_mistake_is_caught(tmp_path, installed_console):
    """The check above can fail: a command that is not there, and a value systemd ignores."""
    unit = _installed_here(UNITS / NAMES[0], tmp_path, installed_console.venv)
    unit.write_text(unit.read_text().replace("Restart=always", "Restart=sometimes"))
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert "restart specifier" in result.stderr
    unit.write_text(unit.read_text().replace(str(installed_console.command), "/nonexistent/rocketmq-console"))
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "not executable" in result.stderr


def test_the_units_run_the_console_command_restarting_always():
    """serve is gunicorn with gthread workers, worker the prefork pool (tests/test_package.py)."""
    web, worker, beat = ((UNITS / name).read_text() for name in NAMES)
    command = "ExecStart=/srv/rocketmq-console/.venv/bin/rocketmq-console"
    assert f"{command} serve " in web and f"{command} worker " in worker and f"{command} beat" in beat
    assert all(
        "Restart=always" in unit and "EnvironmentFile=/etc/rocketmq-console.env" in unit for unit in (web, worker, beat)
    )


def test_the_env_file_example_names_only_known_variables():
    known = {
        line.split("=", 1)[0].lstrip("# ").strip()
        for line in (settings.BASE_DIR / ".env.example").read_text().splitlines()
        if "=" in line
    }
    used = {
        line.split("=", 1)[0]
        for line in (UNITS / "rocketmq-console.env").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert used <= known, used - known
