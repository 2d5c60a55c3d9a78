"""`pip install .`: the wheel holds the console and nothing else, asks for exactly the runtime
pins of requirements.txt, and installed into a fresh virtualenv outside the checkout, its one
command `rocketmq-console` migrates a new database, creates a user, passes `check --deploy` and
serves pages and hashed static files with the production environment of deploy/systemd."""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tomllib
import urllib.parse
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from packaging.requirements import Requirement

from dashboard import cli, servers
from devstack.processes import free_port
from tests.support.scenarios import wait

CHECKOUT = Path(settings.BASE_DIR)
HOST = "console.example.com"  # ALLOWED_HOSTS of deploy/systemd/rocketmq-console.env
PASSWORD = "wheel-test-" + secrets.token_urlsafe(12)


def _version() -> str:
    return tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]["version"]


def test_the_wheel_holds_the_two_packages_with_templates_and_static_files_and_nothing_else(installed_console):
    """Every file of consumers/ and dashboard/ (a package missing from pyproject.toml's list, or
    a data file without a package-data entry, would be missing here), templates/ and static/ as
    dashboard's data; no devstack, bench, tests or harness."""
    expected = {
        str(path.relative_to(CHECKOUT))
        for package in ("consumers", "dashboard")
        for path in (CHECKOUT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    for folder in ("templates", "static", "locale"):
        expected |= {f"dashboard/{p.relative_to(CHECKOUT)}" for p in (CHECKOUT / folder).rglob("*") if p.is_file()}
    with zipfile.ZipFile(installed_console.wheel) as wheel:
        names = {name for name in wheel.namelist() if ".dist-info/" not in name}
        entry_points = wheel.read(f"rocketmq_console-{_version()}.dist-info/entry_points.txt").decode()
    assert names == expected, {"missing": sorted(expected - names), "unexpected": sorted(names - expected)}
    assert "rocketmq-console = dashboard.cli:main" in entry_points


def _runtime_pins() -> set[str]:
    """The direct pins of requirements.txt above "# Tests and tooling" (the transitive pins
    come after that section)."""
    lines = (CHECKOUT / "requirements.txt").read_text().splitlines()
    runtime = lines[: lines.index("# Tests and tooling")]
    return {str(Requirement(pin)) for pin in (line.split("#")[0].strip() for line in runtime) if pin}


def test_the_wheel_requires_exactly_the_runtime_pins_of_requirements_txt(installed_console):
    with zipfile.ZipFile(installed_console.wheel) as wheel:
        metadata = wheel.read(f"rocketmq_console-{_version()}.dist-info/METADATA").decode()
    required = {str(Requirement(line.split(":", 1)[1])) for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")}  # fmt: skip
    assert required == _runtime_pins()
    assert {"Django==5.2.19", "gunicorn==27.0.1", "celery==5.7.0", "psycopg[binary]==3.3.9"} <= required
    assert not {r for r in required if Requirement(r).name in ("pytest", "playwright", "hypothesis", "ruff")}


def _production_environment(tmp_path: Path) -> dict[str, str]:
    """The systemd units' environment file, with this test's secret, database and folders."""
    environment = dict(
        line.split("=", 1)
        for line in (CHECKOUT / "deploy" / "systemd" / "rocketmq-console.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert environment["DEBUG"] == "false" and environment["STATIC_MANIFEST"] == "true"
    secret = tmp_path / "secret-key"
    secret.write_text(secrets.token_urlsafe(50))
    return {
        **environment,
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SECRET_KEY_FILE": str(secret),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
        "STATIC_ROOT": str(tmp_path / "static"),
        "CONSOLE_PASSWORD": PASSWORD,
    }


class Site:
    """The installed console run as an operator would: its command by full path, from a
    working directory outside the checkout, with the production environment."""

    def __init__(self, installed, tmp_path: Path):
        self.installed = installed
        self.environment = _production_environment(tmp_path)
        self.workdir = tmp_path / "work"
        self.workdir.mkdir()

    def run(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
        result = subprocess.run([str(self.installed.command), *args], env=self.environment, cwd=self.workdir,
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert result.returncode == expect, result.stdout + result.stderr
        return result

    def python(self, code: str) -> str:
        python = self.installed.venv / "bin" / "python"
        return subprocess.run([str(python), "-c", code], env=self.environment, cwd=self.workdir,
                              capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip


def test_the_installed_console_migrates_checks_and_serves_from_outside_the_checkout(installed_console, tmp_path):
    site = Site(installed_console, tmp_path)
    assert site.run("--version").stdout.strip() == f"rocketmq-console {_version()}"

    # the code, templates and static files come from the new virtualenv; what the console
    # writes by default goes to the working directory, never into site-packages
    where = json.loads(site.python(
        "import importlib.util as u, json, dashboard.settings as s; print(json.dumps(["
        "u.find_spec('consumers').origin, u.find_spec('dashboard').origin, "
        "str(s.TEMPLATES[0]['DIRS'][0]), str(s.STATICFILES_DIRS[0]), str(s.BASE_DIR)]))"
    ))  # fmt: skip
    assert all(Path(path).is_relative_to(installed_console.site_packages) for path in where[:4]), where
    assert Path(where[4]) == site.workdir

    site.run("migrate", "--no-input")
    assert "ops-admin: admin" in site.run("create-user", "ops-admin", "--role", "admin",
                                          "--password-env", "CONSOLE_PASSWORD").stdout  # fmt: skip
    checked = site.run("check", "--deploy", "--fail-level", "WARNING")
    assert "System check identified no issues" in checked.stdout, checked.stdout + checked.stderr

    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [str(installed_console.command), "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1",
             "--threads", "2", "--graceful-timeout", "5"],
            env=site.environment, cwd=site.workdir, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait(lambda: server.poll() is not None or _answers(port), 60, "the web server answers /healthz")
        assert server.poll() is None, log.read_text()
        _pages_static_files_and_a_login(port)
    finally:
        server.send_signal(signal.SIGTERM)
        returncode = server.wait(30)
    assert returncode == 0, log.read_text()
    assert (tmp_path / "static" / "staticfiles.json").is_file()  # serve collected them (STATIC_MANIFEST)
    assert not (installed_console.site_packages / "var").exists() and not (site.workdir / "var").exists()


def _request(port: int, method: str, path: str, body: str | None = None, headers: dict | None = None):
    """A request as the TLS proxy in front of the console forwards it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body, {"Host": HOST, "X-Forwarded-Proto": "https", **(headers or {})})
        response = connection.getresponse()
        return response, response.read().decode()
    finally:
        connection.close()


def _answers(port: int) -> bool:
    try:
        response, body = _request(port, "GET", "/healthz")
    except OSError:
        return False
    assert response.status == 200 and json.loads(body) == {"status": "ok"}, body
    return True


def _pages_static_files_and_a_login(port: int) -> None:
    response, page = _request(port, "GET", "/login/")
    assert response.status == 200 and "<h1>Log in</h1>" in page, page[:2000]
    assert "Traceback" not in page and "DEBUG = True" not in page
    csrf_cookie = re.search(r"csrftoken=[^;]+", response.getheader("Set-Cookie", ""))[0]
    csrf_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]

    stylesheet = re.search(r'href="(/static/css/base\.[0-9a-f]{12}\.css)"', page)
    assert stylesheet, page[:2000]  # whitenoise's hashed name, from the manifest
    response, css = _request(port, "GET", stylesheet[1])
    assert response.status == 200 and css
    assert "immutable" in response.getheader("Cache-Control", ""), response.getheaders()

    # the user create-user made logs in: the database, the password and the session all work
    form = urllib.parse.urlencode({"username": "ops-admin", "password": PASSWORD, "csrfmiddlewaretoken": csrf_token})
    headers = {"Cookie": csrf_cookie, "Origin": f"https://{HOST}", "Content-Type": "application/x-www-form-urlencoded"}
    response, _ = _request(port, "POST", "/login/", form, headers)
    assert response.status == 302 and response.getheader("Location") == "/", response.getheaders()
    assert "sessionid=" in response.getheader("Set-Cookie", "")


def test_an_incomplete_environment_is_one_line_naming_what_is_missing(installed_console, tmp_path):
    site = Site(installed_console, tmp_path)
    del site.environment["SECRET_KEY_FILE"]
    result = site.run("migrate", expect=1)
    assert "the settings are incomplete: SECRET_KEY (or SECRET_KEY_FILE) is required" in result.stderr
    assert "Traceback" not in result.stderr
    assert "unrecognized arguments: --port" in site.run("serve", "--port", "80", expect=2).stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "the following arguments are required: COMMAND"),
        (["start"], "invalid choice: 'start'"),
        (["serve", "--workers", "0"], "rocketmq-console serve: error: argument --workers: expected a positive"),
        (["serve", "--threads", "many"], "argument --threads: expected a positive integer, not 'many'"),
        (["worker", "--pool", "threads"], "rocketmq-console worker: error: unrecognized arguments: --pool threads"),
        (["beat", "--loglevel", "loud"], "argument -l/--loglevel: invalid choice: 'loud'"),
        (["create-user", "alice"], "rocketmq-console create-user: error: the following arguments are required: --role"),
        (["create-user", "alice", "--role", "root"], "argument --role: invalid choice: 'root'"),
        (["check", "--deplyo"], "rocketmq-console check: error: unrecognized arguments: --deplyo"),
        (["migrate", "--fake", "--bogus"], "rocketmq-console migrate: error: unrecognized arguments: --bogus"),
    ],
)
def test_bad_usage_is_refused_with_the_usage_and_exit_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    error = capsys.readouterr().err
    assert exited.value.code == 2 and "usage: rocketmq-console" in error and message in error, error


def test_serve_is_gunicorn_with_gthread_and_the_worker_celery_with_prefork():
    parse = cli.parser().parse_args
    web = servers.web_options(parse(["serve", "--bind", "0.0.0.0:8080", "--workers", "3"]))
    assert web["worker_class"] == "gthread" and web["bind"] == ["0.0.0.0:8080"] and web["workers"] == 3
    assert web["proc_name"] == "rocketmq-console"
    assert servers.worker_argv(parse(["worker", "-c", "4"])) == [
        "worker", "--pool", "prefork", "--loglevel", "info", "--concurrency", "4",
    ]  # fmt: skip
    assert servers.beat_argv(parse(["beat", "-l", "debug"])) == ["beat", "--loglevel", "debug"]


def test_the_checkout_runs_the_same_command_as_a_module():
    result = subprocess.run([sys.executable, "-m", "dashboard.cli", "--version"], capture_output=True, text=True,
                            cwd=CHECKOUT, timeout=60)  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == f"rocketmq-console {_version()}+checkout"


def test_a_stale_egg_info_beside_the_checkout_does_not_lend_it_a_release_version(tmp_path):
    """`pip install .` in a checkout leaves rocketmq_console.egg-info there; run from that
    directory, importlib.metadata finds it first. A stand-in checkout (the real packages linked
    in, so the files it names are this checkout's own) with such an egg-info of another version
    must still say +checkout."""
    for name in ("dashboard", "consumers", "pyproject.toml"):
        (tmp_path / name).symlink_to(CHECKOUT / name)
    egg = tmp_path / "rocketmq_console.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: rocketmq-console\nVersion: 9.9.9\n")
    (egg / "SOURCES.txt").write_text("dashboard/__init__.py\ndashboard/cli.py\n")
    (egg / "entry_points.txt").write_text("[console_scripts]\nrocketmq-console = dashboard.cli:main\n")

    asked = "from importlib import metadata; print(metadata.version('rocketmq-console'))"
    found = subprocess.run([sys.executable, "-c", asked], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert found.stdout.strip() == "9.9.9", found  # the trap is real: metadata finds the stale one
    result = subprocess.run([sys.executable, "-m", "dashboard.cli", "--version"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"rocketmq-console {_version()}+checkout"


def test_the_web_and_the_workers_tasks_import_without_spark():
    """The `web` image has no pyspark (Containerfile): every URL and task module loads without it."""
    code = (
        "import sys; sys.modules['pyspark'] = None\n"  # any import of pyspark fails
        "import django; django.setup()\n"
        "import dashboard.urls\n"
        "from dashboard.celery import app; app.loader.import_default_modules()\n"
        "from dashboard.celery import FEATURE_PACKAGES\n"
        "import importlib; [importlib.import_module(p + '.tasks') for p in FEATURE_PACKAGES]\n"
        "print('loaded', len(app.tasks))\n"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "DEBUG": "true"}
    result = subprocess.run([sys.executable, "-c", code], cwd=CHECKOUT, env=environment, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0 and "loaded" in result.stdout, result.stderr[-3000:]
