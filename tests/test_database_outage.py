"""The database not answering: every page answers 503 with the console's page and a banner
saying since when, the API its JSON error, never a 500, and the 503 asks the database nothing
(the session's and the user's lookups fail in middleware, before any view). An error about one
statement while the database answers stays the console's 500.

The unit tests make every query raise what psycopg raises for a port nobody listens on; the last
test stops a real PostgreSQL for 30 s under the console's production server (gunicorn)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import psycopg
import pytest
import requests
from django.db import connection, utils
from django.test import Client
from django.urls import get_resolver, reverse

from consumers.identity import ACCESS, create_token
from consumers.web import errors
from consumers.web.errors import database_unavailable_cause, note_database_answered
from devstack.postgres import LocalPostgres
from devstack.processes import ManagedProcess, free_port
from tests.conftest import PASSWORD
from tests.identity.test_access import _send, _urls, world  # noqa: F401 (world: a fixture)

BANNER = 'id="database-outage"'
# what Django's atomic blocks send to undo a failed block: let through, so that the test's own
# transaction survives the failures it provokes (a real outage fails them too; nothing to test)
SAVEPOINTS = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


def _django_error(driver_error: Exception, kind=utils.OperationalError) -> Exception:
    """`driver_error` as Django raises it: its own class, raised from the driver's."""
    try:
        try:
            raise driver_error
        except Exception as exc:
            raise kind(*exc.args) from exc
    except kind as raised:
        return raised


def _refused() -> Exception:
    try:
        psycopg.connect(f"host=127.0.0.1 port={free_port()} dbname=console user=console", connect_timeout=2)
    except psycopg.OperationalError as exc:
        return _django_error(exc)
    raise AssertionError("something answered on a free port")


def _no_such_table() -> Exception:
    try:
        sqlite3.connect(":memory:").execute("SELECT * FROM consumers_cluster")
    except sqlite3.OperationalError as exc:
        return _django_error(exc)
    raise AssertionError("the table exists")


def _locked(path: Path) -> Exception:
    """SQLite's "database is locked": another connection holds the write lock past the timeout."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        sqlite3.connect(path, timeout=0).execute("INSERT INTO t VALUES (1)")
    except sqlite3.OperationalError as exc:
        return _django_error(exc)
    finally:
        holder.close()
    raise AssertionError("not locked")


class DatabaseDown:
    """Every query on the test's connection raises `error` (after the first `after` of them).
    `attempts` counts the queries tried since it was last cleared, `at_answer` how many had been
    tried when the 503 began (None: no 503): any more were asked by the 503 itself."""

    def __init__(self, error: Exception | None = None, after: int = 0):
        self.error, self.after, self.attempts, self.at_answer = error or _refused(), after, 0, None

    def __call__(self, execute, sql, params, many, context):
        if sql.startswith(SAVEPOINTS):
            return execute(sql, params, many, context)
        self.attempts += 1
        if self.attempts > self.after:
            raise self.error
        return execute(sql, params, many, context)

    def clear(self) -> None:
        self.attempts, self.at_answer = 0, None

    @contextlib.contextmanager
    def installed(self):
        noted = errors.note_database_unavailable

        def note(error):
            self.at_answer = self.attempts
            return noted(error)

        try:
            with connection.execute_wrapper(self), mock.patch.object(errors, "note_database_unavailable", note):
                yield self
        finally:
            note_database_answered()  # the outage this process noted ends with the test


def _browser(user=None) -> Client:
    browser = Client(raise_request_exception=False)  # Django's test client re-raises what the 500 handler saw
    if user is not None:
        browser.force_login(user)
    return browser


def _assert_outage_answer(response, what: str) -> None:
    assert response.status_code == 503, f"{what}: {response.status_code}"
    assert response["Cache-Control"] == "no-store" and response["Retry-After"] == "10", what
    text = response.content.decode()
    assert "Traceback" not in text and "127.0.0.1" not in text, what
    if response["Content-Type"] == "application/json":
        body = response.json()
        assert body["status"] == 503 and body["error"].startswith("Database unavailable since "), what
        assert body["unavailable_since"], what
    else:
        assert BANNER in text and "Database unavailable since" in text, what


def test_what_counts_as_the_database_not_answering(tmp_path):
    assert database_unavailable_cause(_refused()) is not None
    assert database_unavailable_cause(_django_error(psycopg.errors.AdminShutdown("terminating"))) is not None
    assert database_unavailable_cause(_django_error(psycopg.errors.TooManyConnections("too many"))) is not None
    assert database_unavailable_cause(utils.InterfaceError("connection already closed")) is not None
    try:
        sqlite3.connect("/")  # a folder: SQLITE_CANTOPEN, as for a file the process may not open
    except sqlite3.OperationalError as exc:
        assert database_unavailable_cause(_django_error(exc)) is not None
    # raised from, or while handling, a database error that says it
    wrapped = _django_error(_refused(), kind=RuntimeError)
    assert database_unavailable_cause(wrapped) is not None
    # about one statement while the database answers: not an outage
    assert database_unavailable_cause(_no_such_table()) is None
    assert database_unavailable_cause(_locked(tmp_path / "busy.sqlite3")) is None
    assert database_unavailable_cause(_django_error(psycopg.errors.DeadlockDetected("deadlock"))) is None
    assert database_unavailable_cause(_django_error(psycopg.errors.QueryCanceled("statement timeout"))) is None
    assert database_unavailable_cause(ValueError("x")) is None


def test_every_url_answers_503_while_the_database_is_down_and_asks_it_nothing(personas, world):  # noqa: F811
    admin, visitor = _browser(personas["admin"]), _browser()
    _, secret = create_token(personas["admin"], name="script", days=None)
    urls = _urls(world)
    with DatabaseDown().installed() as down:
        for name, method, url in urls:
            down.clear()
            response = _send(admin, method, name, url)
            _assert_outage_answer(response, f"{method} {url}")
            # the first query failed (the session's) and nothing after it asked the database
            assert down.attempts == down.at_answer == 1, f"{method} {url}: {down.attempts} queries tried"
        for name, method, url in urls:
            if url.startswith("/api/"):  # a script's token, no session: the view asks the database
                down.clear()
                response = _send(Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {secret}"),
                                 method, name, url)  # fmt: skip
                _assert_outage_answer(response, f"{method} {url} with a token")
                assert down.attempts == down.at_answer == 1
        signing_in = visitor.post("/login/", {"username": "admin", "password": PASSWORD})
        _assert_outage_answer(signing_in, "signing in")
        assert visitor.get("/groups/").status_code == 302  # no session: to the login page, no database needed
    assert admin.get("/groups/").status_code == 200  # back, and still signed in


def test_the_database_lost_while_a_view_runs_answers_503(personas, world):  # noqa: F811
    """The session and user were read; the database goes away at a later query of the view or
    of its template (the header's counts, a page's rows)."""
    admin = _browser(personas["admin"])
    for _name, method, url in _urls(world):
        if method != "GET":
            continue
        with DatabaseDown(after=10**6).installed() as counting:
            healthy = admin.get(url).status_code
        queries = counting.attempts
        assert healthy < 500 or healthy == 502, f"{url}: {healthy}"
        for after in sorted({queries // 2, queries - 1} - {0}):
            with DatabaseDown(after=after).installed() as down:
                response = admin.get(url)
            _assert_outage_answer(response, f"GET {url} failing at query {after + 1} of {queries}")
            # (a template's {% if %} swallows an error and the page goes on: it may try again)
            assert down.attempts == down.at_answer, f"GET {url}: the 503 asked the database"


def test_an_error_about_one_statement_is_still_the_consoles_own_500(personas, redis):
    admin = _browser(personas["admin"])
    with DatabaseDown(_no_such_table(), after=4).installed():
        page, api = admin.get("/clusters/"), admin.get("/api/clusters/")
    assert page.status_code == 500 and "Something went wrong on our side" in page.content.decode()
    assert BANNER not in page.content.decode()
    assert api.status_code == 500 and api.json()["error"] == "server error"


def test_the_outage_page_is_in_the_readers_language_and_shows_no_user(personas, redis):
    admin = _browser(personas["admin"])
    with DatabaseDown().installed():
        page = admin.get("/groups/", HTTP_ACCEPT_LANGUAGE="zh-Hans")
        api = admin.get("/api/groups/", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    text = page.content.decode()
    assert page.status_code == 503 and "数据库不可用" in text and '<html lang="zh-hans">' in text
    assert "admin" not in text and "logout" not in text  # the header's user would be read from the database
    assert '<meta http-equiv="refresh" content="10">' in text
    assert api.json()["error"].startswith("Database unavailable since ")  # the API speaks English


def test_a_refused_post_is_not_reloaded(personas, redis):
    admin = _browser(personas["admin"])
    with DatabaseDown().installed():
        response = admin.post("/account/tokens/new/", {"name": "x", "days": "1"})
    assert response.status_code == 503 and 'http-equiv="refresh"' not in response.content.decode()


# A real PostgreSQL stopped under the production server

SETUP = """
import sys
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from consumers.identity import create_or_update_user, create_token
from consumers.models import Cluster
admin = create_or_update_user("admin", "admin", sys.argv[1])
Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
print(create_token(admin, name="script", days=None)[1])
"""
OUTAGE = float(os.environ.get("DATABASE_OUTAGE_SECONDS", "30"))


def _pages_and_api() -> list[str]:
    """Every page and API URL a GET may ask for without naming anything, and a group's page."""
    found = [reverse(f"consumers:{p.name}") for p in get_resolver("consumers.urls").url_patterns
             if not p.pattern.converters and ACCESS[p.name].get]  # fmt: skip
    return [*found, "/groups/east/orders/", "/api/groups/east/orders/"]


def _sign_in(browser: requests.Session, base: str) -> requests.Response:
    browser.get(base + "/login/", timeout=10)  # the CSRF cookie (the page needs no database without a session)
    form = {"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")}
    return browser.post(base + "/login/", data=form, timeout=10, allow_redirects=False)


def _restart(server: LocalPostgres) -> None:
    """PostgreSQL again on its port and data, as after `systemctl start postgresql`."""
    stopped = server.process
    stopped.stop(0)
    server.process = ManagedProcess("postgres", stopped.args, log_path=server.base / "postgres-again.log",
                                    user=server.user)  # fmt: skip
    server.process.wait_for_log("ready to accept connections", 60)


@pytest.mark.postgres
@pytest.mark.slow
def test_postgresql_stopped_30_s_under_the_production_server(tmp_path: Path, redis_server):
    from django.conf import settings

    database = LocalPostgres()  # in a folder of its own under /tmp: the postgres account must reach it
    web = None
    try:
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))},
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "DEBUG": "false",
            "SECRET_KEY": "database-outage-" + "d" * 40,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": database.url,
            "VAR_DIR": str(tmp_path / "var"),
            "REDIS_URL": redis_server.url.rsplit("/", 1)[0] + "/10",  # a Redis database of its own
            "SECURE_SSL_REDIRECT": "false",
            "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false",
        }
        setup = subprocess.run([sys.executable, "-c", SETUP, PASSWORD], env=environment, cwd=settings.BASE_DIR,
                               capture_output=True, text=True, timeout=300)  # fmt: skip
        assert setup.returncode == 0, setup.stderr[-3000:]
        secret = setup.stdout.split()[-1]
        port = free_port()
        web = ManagedProcess(
            "web",
            [sys.executable, "-m", "dashboard.cli", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1",
             "--threads", "4"],
            log_path=tmp_path / "web.log",
            cwd=settings.BASE_DIR,
            env=environment,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        web.wait_until(lambda: requests.get(base + "/healthz", timeout=2).status_code == 200, 120, "/healthz answers")
        browser = requests.Session()
        signed_in = _sign_in(browser, base)
        assert signed_in.status_code == 302, signed_in.text[-2000:]
        script = requests.Session()
        script.headers["Authorization"] = f"Bearer {secret}"
        urls = _pages_and_api()

        def walk() -> dict[tuple[str, str], int]:
            answers = {("session", url): browser.get(base + url, timeout=10, allow_redirects=False) for url in urls}
            answers |= {("token", url): script.get(base + url, timeout=10) for url in urls if url.startswith("/api/")}
            for (who, url), response in answers.items():
                if response.status_code == 503:
                    _assert_outage_answer(_Answer(response), f"{who} GET {url}")
            return {key: response.status_code for key, response in answers.items()}

        before = walk()
        assert all(status < 500 or status == 502 for status in before.values()), before

        database.process.popen.send_signal(signal.SIGINT)  # fast shutdown, as `systemctl stop postgresql`
        database.process.popen.wait(30)
        down_at, during, rounds = time.monotonic(), {}, 0
        while time.monotonic() - down_at < OUTAGE:
            for key, status in walk().items():
                during.setdefault(key, set()).add(status)
            rounds += 1
            time.sleep(1)
        ready, health = requests.get(base + "/readyz", timeout=10), requests.get(base + "/healthz", timeout=10)
        refused_login = _sign_in(requests.Session(), base)
        _restart(database)
        back_at = time.monotonic()

        seen = sorted({status for statuses in during.values() for status in statuses})
        print(f"\n  PostgreSQL down {OUTAGE:.0f} s: {rounds} rounds of {len(during)} URLs, statuses {seen}")
        assert all(statuses == {503} for statuses in during.values()), during
        assert ready.status_code == 503 and ready.json()["checks"]["database"] == "failed", ready.text
        assert health.status_code == 200 and health.json()["database"] == "unavailable", health.text
        assert refused_login.status_code == 503, refused_login.status_code

        # each connection the server kept from before fails once, then it connects again
        after, late = {}, []
        while time.monotonic() - back_at < 20 and after != before:
            after = walk()
            late += [f"{who} {url}: {status}" for (who, url), status in after.items() if status != before[who, url]]
        print(
            f"  every URL answered as before {time.monotonic() - back_at:.1f} s after PostgreSQL was back; "
            f"before that: {late or 'nothing else'}; before the outage: {sorted(set(before.values()))}"
        )
        assert after == before
        assert requests.get(base + "/readyz", timeout=10).json()["checks"]["database"] == "ok"
        assert requests.get(base + "/healthz", timeout=10).json() == {"status": "ok"}
        assert "Traceback" not in web.log_path.read_text(errors="replace"), web.log_tail()
    finally:
        if web is not None:
            web.stop(10)
        database.stop()


class _Answer:
    """A requests response seen as Django's test responses are (headers by [], .content, .json())."""

    def __init__(self, response: requests.Response):
        self.status_code, self.content, self.json = response.status_code, response.content, response.json
        self._headers = response.headers

    def __getitem__(self, name: str) -> str:
        return self._headers[name]
