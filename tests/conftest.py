"""Shared fixtures: a real local RocketMQ (two masters), mqadmin, the traffic harness, Redis.

The cluster, mqadmin and Redis live for the whole session; each test uses its own topics and
groups (see `names`), and the consumers a test starts are stopped when it ends.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest

from consumers.rocketmq import AdminClient
from devstack.mqadmin import MQAdmin
from devstack.processes import port_block, stop_all
from devstack.redis import LocalRedis
from devstack.rocketmq import LocalRocketMQ, run_coroutine
from devstack.runtime import ensure_runtime
from devstack.traffic import Harness
from tests.support.scenarios import settle_groups

SESSION_DIR = Path(tempfile.mkdtemp(prefix="console-tests-"))


def pytest_sessionfinish(session, exitstatus):
    stop_all()  # whatever a failed fixture left running


# scripts/test.sh runs the suite in two lanes side by side. The cluster lane has the tests on the
# session's RocketMQ or Keycloak, which mostly wait on brokers, clients and JVMs; the python lane
# has the rest (those that start a RocketMQ of their own too), which mostly keep a core busy. Each
# lane runs on two pytest-xdist workers, and each worker is a session of its own (its own cluster
# when a test asks for one, Redis, database and temporary folders).
#
# Tests are handed out one at a time (--dist load), not a module at a time: a module's browser or
# server, and Keycloak, then start once per worker rather than once per lane, and still the suite
# measured 19 minutes against 25 with modules kept together (one long module left for the end
# keeps one worker busy while the other has nothing left to do).
SESSION_PARTS = {"rocketmq", "keycloak"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if SESSION_PARTS & set(getattr(item, "fixturenames", ())):
            item.add_marker("cluster_lane")
    # the modules with slow tests are handed out first (pytest-django then puts the tests that
    # flush the database after the others, keeping this order within each kind)
    slow = {_module(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _module(item) not in slow)


def _module(item) -> str:
    return item.nodeid.split("::")[0]


def _worker_port_block() -> None:
    """Two workers of a lane could pick the same free port at once (each knows only the ports it
    handed out itself): each takes its share of the lane's block (FREE_PORTS, devstack/processes.py)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker and count > 1:
        floor, ceiling = port_block()
        share = (ceiling - floor) // count
        first = floor + int(worker.removeprefix("gw")) * share
        os.environ["FREE_PORTS"] = f"{first}-{first + share - 1}"


_worker_port_block()


def run(coro):
    """Run a coroutine to completion from a synchronous test."""
    return run_coroutine(lambda: coro)


@pytest.fixture(scope="session")
def rmq_runtime():
    return ensure_runtime()


@pytest.fixture(scope="session")
def rocketmq(rmq_runtime):
    cluster = LocalRocketMQ(
        rmq_runtime, broker_names=("broker-a", "broker-b"), base_dir=SESSION_DIR / "rocketmq", metrics=True
    )
    cluster.start()
    yield cluster
    cluster.discard()  # throwaway: a graceful stop of every JVM took most of a minute


@pytest.fixture(scope="session")
def namesrv(rocketmq) -> str:
    return rocketmq.namesrv_addr


@pytest.fixture(scope="session")
def mqadmin(rmq_runtime, rocketmq):
    admin = MQAdmin(rmq_runtime, rocketmq.namesrv_addr, SESSION_DIR / "mqadmin")
    yield admin
    admin.close()


@pytest.fixture(scope="session")
def session_harness(rmq_runtime, rocketmq):
    harness = Harness(rmq_runtime, rocketmq.namesrv_addr, SESSION_DIR / "harness")
    yield harness
    harness.close()


class ScopedTraffic:
    """The session harness seen by one test: consumers it starts are stopped afterwards."""

    def __init__(self, harness: Harness):
        self.harness = harness
        self.consumers = []

    def produce(self, topic: str, count: int, **options):
        return self.harness.produce(topic, count, **options)

    def consume(self, group: str, topic: str, **options):
        run = self.harness.consume(group, topic, **options)
        self.consumers.append(run)
        return run

    def grpc_consume(self, endpoint: str, group: str, topic: str, **options):
        run = self.harness.grpc_consume(endpoint, group, topic, **options)
        self.consumers.append(run)
        return run

    def close(self) -> None:
        for run in self.consumers:
            if not run.events("stopped"):
                if run.events("received") and any(e["result"] == "held" for e in run.deliveries):
                    run.release()
                run.stop()


@pytest.fixture
def traffic(session_harness):
    wrapper = ScopedTraffic(session_harness)
    yield wrapper
    wrapper.close()


@pytest.fixture
def names():
    """Unique topic and group names for one test."""
    suffix = uuid.uuid4().hex[:8]

    class Names:
        def topic(self, label: str = "t") -> str:
            return f"T-{label}-{suffix}"

        def group(self, label: str = "g") -> str:
            return f"G-{label}-{suffix}"

    return Names()


@pytest.fixture
def create_topic(mqadmin):
    """Create a topic on every master (queues per broker), as mqadmin updateTopic -c does."""

    def create(topic: str, queues: int = 4, perm: int = 6) -> str:
        mqadmin.run(
            "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", str(queues), "-w", str(queues), "-p", str(perm)
        )
        return topic

    return create


@pytest.fixture
def admin_client_factory(namesrv):
    def make(**options) -> AdminClient:
        return AdminClient(namesrv, **options)

    return make


@pytest.fixture(scope="session")
def settled(session_harness, mqadmin):
    """Healthy, lagging, failing and stalled groups at rest on one topic (read-only: tests
    that change offsets make their own groups)."""
    groups = settle_groups(session_harness, mqadmin)
    yield groups
    groups.stalled.release()
    for consumer in groups.all:
        if not consumer.events("stopped"):
            consumer.stop()


@pytest.fixture(scope="session")
def keycloak():
    """Keycloak with the console realm (devstack/keycloak/console-realm.json), started once per
    session by the first test that asks for it (mark those tests `keycloak`)."""
    from devstack.keycloak import LocalKeycloak, ensure_keycloak

    server = LocalKeycloak(ensure_keycloak()).start()
    print(f"\nKeycloak at {server.url}: ready in {server.startup_seconds:.1f} s")
    yield server
    server.discard()


@pytest.fixture(scope="session")
def redis_server():
    server = LocalRedis(SESSION_DIR / "redis")
    os.environ["REDIS_URL"] = server.url
    yield server
    server.stop()


@pytest.fixture(scope="session")
def installed_console(tmp_path_factory):
    """The wheel of this checkout installed into a fresh virtualenv outside it (tests/support/installed.py)."""
    from django.conf import settings

    from tests.support.installed import build_wheel, install

    base = tmp_path_factory.mktemp("installed")
    return install(build_wheel(Path(settings.BASE_DIR), base), base / "venv")


# Hypothesis: 300 examples per property by default, 1000 in CI (HYPOTHESIS_PROFILE=ci).
# The deadline catches hangs and pathological slow paths without flaking on a busy machine.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("default", max_examples=300, deadline=2000)
_hypothesis_settings.register_profile("ci", max_examples=1000, deadline=2000, print_blob=True)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def redis(redis_server, settings):
    """A clean Redis database for one test, used by the code under test too."""
    from consumers.jobs.redis_client import get_redis

    settings.REDIS_URL = redis_server.url
    client = get_redis()
    client.flushdb()
    return client


@pytest.fixture
def history_dir(tmp_path, settings):
    settings.HISTORY_URL = str(tmp_path / "history")
    settings.HISTORY_SPOOL_DIR = tmp_path / "history-spool"
    return tmp_path / "history"


PASSWORD = "a-long-test-password-1"


@pytest.fixture(autouse=True)
def _site_language_afterwards():
    """A request activates its language for the thread (the language middleware): every test
    starts from the default, whatever language the one before it asked for."""
    from django.conf import settings
    from django.utils import translation

    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(scope="session", autouse=True)
def quick_password_hashing():
    """Test users' passwords hashed with few iterations (tests/support/hashers.py)."""
    from django.conf import settings
    from django.test import override_settings

    quick = "tests.support.hashers.QuickPBKDF2PasswordHasher"
    with override_settings(PASSWORD_HASHERS=[quick, *settings.PASSWORD_HASHERS]):
        yield


@pytest.fixture(scope="session", autouse=True)
def views_imported():
    """Every view module imported before any test patches a name they import: the first
    request of a session imports the URLconf, and a view module imported under a test's
    monkeypatch keeps the patched function for the rest of the session. (tests/dlq/test_api.py's
    DLQ in memory stayed in the export view that way whenever its tests came first in a worker:
    later exports read one queue of the real DLQ, and a write-only one as if readable.)"""
    from django.urls import get_resolver

    assert get_resolver().url_patterns


@pytest.fixture
def personas(db):
    """One user per role, and one with no role at all."""
    from django.contrib.auth import get_user_model

    from consumers.identity import create_or_update_user, ensure_roles

    ensure_roles()  # transactional tests start from an emptied database
    users = {role: create_or_update_user(role, role, PASSWORD) for role in ("viewer", "operator", "approver", "admin")}
    users["nobody"] = get_user_model().objects.create_user("nobody", password=PASSWORD)
    return users


@pytest.fixture
def viewer_client(client, personas):
    client.force_login(personas["viewer"])
    return client


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright (no downloaded browser).

    Playwright's sync API keeps an event loop marked as running in this thread while it is
    open, which makes Django refuse ORM calls here: browser tests allow them (they run
    nothing concurrently) and run anything using asyncio in another thread (see in_thread).
    Module scope: the loop ends with the browser module, not the whole session."""
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def in_thread(function, *args):
    """Call `function` in a thread of its own and return its result (or raise its error)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(function, *args).result()


def new_context(browser, **options):
    """A browser context of the tests: every page of every test opened through it.

    Navigation may wait longer than Playwright's 30 s: on CI's two loaded cores (four pytest
    workers, the brokers, the proxy and Java clients, another test's own RocketMQ) a page with
    plotly once took more, and so did a second context's first page. These tests check what the
    pages do; their speed is measured under bench/."""
    context = browser.new_context(**{"viewport": {"width": 1400, "height": 1000}, **options})
    context.set_default_navigation_timeout(90_000)
    return context


@pytest.fixture
def page(browser):
    context = new_context(browser)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def polled(browser, redis, history_dir, namesrv, settled, personas):
    """The local cluster, polled once: what the browser tests click through (tests/test_browser.py
    and tests/test_browser_changes.py)."""
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster

    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    in_thread(poll_cluster, cluster)
    return cluster


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """SQLite test databases live in a file, not in shared-cache memory: threads that write at
    once (workers racing for a job, a control while a job runs) then wait for the lock, as they
    would on a real SQLite file, instead of failing with 'database table is locked'."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database["TEST"] = {**database.get("TEST", {}), "NAME": str(SESSION_DIR / "test-db.sqlite3")}
        database.setdefault("OPTIONS", {})["timeout"] = 30


@pytest.fixture(autouse=True)
def _fresh_kept_rows():
    """Each test starts with no groups-list rows kept by this process (live/rows.py, and the index
    decoded by snapshots.read_index): a rolled-back database gives the next test's clusters the
    same ids."""
    from consumers.live import rows, snapshots

    rows.forget()
    snapshots._decoded.clear()
    yield
