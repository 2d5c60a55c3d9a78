"""The main flow in Chromium through the production server, as a site runs it: `rocketmq-console
serve` (gunicorn, gthread) with DEBUG off, hashed static files collected and served by whitenoise,
its own database and Redis database, a cluster polled from the session's real RocketMQ. The
other browser tests use Django's in-process live server (they share the test database); this
one checks that what the server in production sends works the same: every main page loads with
no script error, no blocked resource and no Django debug output, an operator previews a reset,
and a missing page is the console's own 404."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from devstack.processes import ManagedProcess, free_port
from tests.conftest import PASSWORD, new_context
from tests.test_browser import CSP_WATCH, submit, watch_errors

pytestmark = [pytest.mark.browser, pytest.mark.broker, pytest.mark.slow]

SETUP = """
import sys
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.identity import create_or_update_user
for role in ("viewer", "operator"):
    create_or_update_user(role, role, sys.argv[2])
result = poll_cluster(Cluster.objects.create(name="local", namesrv_addrs=sys.argv[1]))
print(result.status, result.groups)
"""
DEBUG_MARKS = ("Traceback", "DEBUG = True", "Django tried these URL patterns", "technical_500", "djdt")


@pytest.fixture(scope="module")
def production_server(tmp_path_factory, namesrv, settled, redis_server):
    base = tmp_path_factory.mktemp("production")
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DEBUG": "false",
        "SECRET_KEY": "production-browser-" + "s" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"sqlite:///{base / 'console.sqlite3'}",
        "VAR_DIR": str(base / "var"),
        # a Redis database of its own: its cluster's snapshots never meet the test process's
        "REDIS_URL": redis_server.url.rsplit("/", 1)[0] + "/9",
        "STATIC_MANIFEST": "true",
        "STATIC_ROOT": str(base / "static"),
        # plain HTTP on the loopback: what differs from a site behind TLS, nothing else
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_HSTS_SECONDS": "0",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
    }
    setup = subprocess.run([sys.executable, "-c", SETUP, namesrv, PASSWORD], env=environment, cwd=settings.BASE_DIR,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert setup.returncode == 0, setup.stderr[-3000:]
    assert setup.stdout.split()[-2] == "ok", setup.stdout
    port = free_port()
    server = ManagedProcess(
        "web",
        [sys.executable, "-m", "dashboard.cli", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        log_path=base / "web.log",
        cwd=settings.BASE_DIR,
        env=environment,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        server.wait_until(lambda: urllib.request.urlopen(base_url + "/healthz", timeout=2).status == 200, 120,
                          "/healthz answers")  # fmt: skip
        yield base_url
    finally:
        server.stop(10)


def sign_in(page, base: str, username: str) -> None:
    """The password login, landing on the groups list."""
    page.goto(base + "/groups/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(base + "/groups/")


def test_the_main_pages_through_gunicorn_with_debug_off(page, production_server, settled):
    base, group = production_server, settled.lagging.group
    errors = watch_errors(page)
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.add_init_script(CSP_WATCH)
    sign_in(page, base, "operator")
    pages = ["/", "/groups/", f"/groups/local/{group}/", "/changes/", "/dlq/", "/stats/", "/reports/", "/clusters/",
             "/alerts/", "/audit/", "/account/tokens/"]  # fmt: skip
    for path in pages:
        answer = page.goto(base + path)
        assert answer.status == 200, (path, answer.status)
        page.wait_for_load_state("networkidle")
        html = page.content()
        assert page.locator("header.topbar").count() == 1, (path, html[:1000])
        assert not [mark for mark in DEBUG_MARKS if mark in html], path
        assert page.locator("script[src*='django-htmx/debug']").count() == 0  # DEBUG off: no debug script
        assert errors == [] and failed == [], (path, errors, failed)
    stylesheets = page.evaluate("[...document.querySelectorAll('link[rel=stylesheet]')].map(l => l.href)")
    assert stylesheets and all(_hashed(href) for href in stylesheets), stylesheets

    # an operator's main action: the reset form, previewed as the strategy changes
    page.goto(f"{base}/groups/local/{group}/reset/")
    # the form's first preview comes first: a strategy chosen while it is in flight replaces it
    # (hx-sync="this:replace"), and htmx logs the aborted request as a console error
    page.wait_for_load_state("networkidle")
    with page.expect_response(lambda r: "/reset/preview/" in r.url and "strategy=earliest" in r.url, timeout=30_000):
        page.select_option("#id_strategy", "earliest")
    page.wait_for_selector("#plan tr.plan-row", timeout=30_000)
    assert page.locator("#preview-error").count() == 0 and errors == [] and failed == []
    assert page.evaluate("window.__csp || []") == []

    # the console's own 404 page, not Django's debug page listing the URL patterns
    missing = page.goto(base + "/no-such-page/")
    assert missing.status == 404 and page.locator("header.topbar").count() == 1
    assert not [mark for mark in DEBUG_MARKS if mark in page.content()]


def _hashed(href: str) -> bool:
    """A ManifestStaticFilesStorage name: the content hash before the extension (app.3f2a9c1b.css)."""
    name = Path(href.split("?")[0]).name
    parts = name.split(".")
    return len(parts) >= 3 and len(parts[-2]) == 12 and all(c in "0123456789abcdef" for c in parts[-2])


# An English sentence almost always holds one of these words; the identifiers a page shows
# (group, topic, broker and client names, state names, numbers) are removed before looking.
ENGLISH_WORDS = re.compile(
    r"\b(the|of|and|or|to|in|is|are|was|for|with|from|by|this|that|no|not|none|never|all|each|has|have"
    r"|been|yet|than|when|which|will|can|there|their|its|any|only|last|first|since|after|before)\b",
    re.IGNORECASE,
)
# a token with a digit or one of RocketMQ's name characters in it is a name, not a word
NAME_TOKEN = re.compile(r"\S*[0-9_%@#:/.\-]\S*")
HAN = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_MONTH = re.compile(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b")


def english_left(text: str) -> list[str]:
    """The lines of a page's text that still read as English, names and identifiers aside."""
    found = []
    for line in text.splitlines():
        words = NAME_TOKEN.sub(" ", line)
        if ENGLISH_WORDS.search(words):
            found.append(line.strip())
    return found


def test_the_english_check_sees_a_sentence_and_not_names():
    assert english_left("消费者组\nNo statistics yet.\nlocal  payments-orders  STALLED") == ["No statistics yet."]
    assert english_left("群组 orders-in-2 %RETRY%to_the 12:30 broker-a") == []


def test_a_chinese_browser_gets_the_main_pages_in_chinese_and_a_switch_to_english_is_kept(
    browser, production_server, settled
):
    base, group = production_server, settled.lagging.group
    context = new_context(browser, locale="zh-CN")
    page = context.new_page()
    errors = watch_errors(page)
    try:
        sign_in(page, base, "operator")
        pages = ["/", "/groups/", f"/groups/local/{group}/", f"/groups/local/{group}/reset/", "/dlq/", "/stats/",
                 "/reports/"]  # fmt: skip
        for path in pages:
            assert page.goto(base + path).status == 200, path
            page.wait_for_load_state("networkidle")
            if path.endswith("/reset/"):  # the reset form with its preview
                page.select_option("#id_strategy", "earliest")
                page.wait_for_selector("#plan tr.plan-row", timeout=30_000)
            assert page.evaluate("document.documentElement.lang") == "zh-hans", path
            text = page.evaluate("document.querySelector('main').innerText")
            assert HAN.search(text), (path, text[:500])
            assert english_left(text) == [], (path, english_left(text))
            if path == f"/groups/local/{group}/":  # the lag chart: plotly's dates and mode bar in Chinese
                page.wait_for_selector("#lag-chart .xtick text", timeout=30_000)
                ticks = page.eval_on_selector_all(".xtick text", "els => els.map(e => e.textContent)")
                titles = page.eval_on_selector_all(".modebar-btn", "els => els.map(e => e.dataset.title)")
                assert not [t for t in ticks if ENGLISH_MONTH.search(t)], ticks
                assert titles and not [t for t in titles if t and not HAN.search(t)], titles
        assert errors == []

        # the switch in the header: English, kept on the user (a new browser still asking for
        # Chinese signs in and reads English)
        submit(page, "#language-switch button[value=en]")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("document.documentElement.lang") == "en"
    finally:
        context.close()
    again = new_context(browser, locale="zh-CN")
    page = again.new_page()
    try:
        sign_in(page, base, "operator")
        assert page.evaluate("document.documentElement.lang") == "en"
        assert not HAN.search(page.evaluate("document.querySelector('main').innerText"))
    finally:
        again.close()
