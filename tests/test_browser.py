"""Click through the console in headless Chromium against the real cluster: the pages (the
changes and their approvals: test_browser_changes.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from consumers.live.poll import poll_cluster
from devstack.mqadmin import parse_consumer_progress
from tests.conftest import PASSWORD, in_thread

# transactional: the live server runs in another thread; serialized rollback keeps the role
# groups the migration created across tests
pytestmark = [
    pytest.mark.browser,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


CSP_WATCH = """document.addEventListener("securitypolicyviolation", function (e) {
  (window.__csp = window.__csp || []).push(e.violatedDirective + " " + e.blockedURI);
});"""


def log_in(page, base: str, user: str = "viewer", landing: str = "/groups/") -> None:
    page.add_init_script(CSP_WATCH)
    page.goto(base + landing)
    assert "/login/" in page.url
    page.fill("#id_username", user)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(base + landing)


def submit(page, selector: str) -> None:
    """Click a button that submits a whole-page form, and return once the page it leads to has
    loaded: the elements of the page before the click would satisfy the next wait at once, and
    the server may not have handled the form yet (a race CI's load showed)."""
    with page.expect_navigation():
        page.click(selector)


def test_log_in_filter_open_a_group_and_see_a_refresh_without_reload(page, live_server, polled, settled, mqadmin):
    base = live_server.url
    group = settled.stalled.group
    log_in(page, base)
    assert page.locator("tr[data-group]").count() >= 4

    page.fill("input[name=q]", group)
    page.click("#group-filters button[type=submit]")
    page.wait_for_url(f"**/groups/?q={group}**")
    rows = page.locator("tr[data-group]")
    assert rows.count() == 1 and rows.first.get_attribute("data-group") == group

    rows.first.locator("a").click()
    page.wait_for_selector("#queues")
    shown = [
        (
            row.get_attribute("data-topic"),
            row.get_attribute("data-broker"),
            int(row.get_attribute("data-queue")),
            int(row.locator("td.max").inner_text().replace(",", "")),
            int(row.locator("td.consumer").inner_text().replace(",", "")),
            int(row.locator("td.lag").inner_text().split()[0].replace(",", "")),
        )
        for row in page.locator("tr.queue").all()
    ]
    theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
    assert sorted(shown) == sorted(
        (r.topic, r.broker, r.queue_id, r.broker_offset, r.consumer_offset, r.diff) for r in theirs.rows
    )

    page.evaluate("window.__sameDocument = 42")
    before = page.locator(".as-of").inner_text()
    in_thread(poll_cluster, polled)  # new data; the page refreshes its state by itself (htmx, every 5 s)
    # polled from here: wait_for_function would evaluate a string in the page, which the CSP forbids
    for _ in range(100):
        if page.locator(".as-of").inner_text() != before:
            break
        page.wait_for_timeout(200)
    assert page.locator(".as-of").inner_text() != before
    assert page.evaluate("window.__sameDocument") == 42  # swapped in place: no reload
    page.wait_for_selector("#lag-chart .main-svg", timeout=20_000)  # plotly drew under the CSP
    assert page.evaluate("window.__csp || []") == []  # no script, style or request was refused
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=str(Path(os.environ["SCREENSHOT_DIR"]) / "group-detail.png"), full_page=True)


def test_the_table_refresh_pauses_while_the_tab_is_hidden(page, live_server, polled):
    log_in(page, live_server.url)
    page.wait_for_selector("#groups")
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/groups/" in r.url else None)
    page.evaluate(
        "Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'))"
    )
    page.wait_for_timeout(6_500)
    assert requests == []  # hidden: the 5 s refresh skipped its turn
    page.evaluate(
        "Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'))"
    )
    page.wait_for_timeout(1_000)
    assert requests  # visible again: refreshed at once


def test_the_overview_and_clusters_pages(page, live_server, polled, settled):
    log_in(page, live_server.url)
    page.goto(live_server.url + "/")
    assert page.locator("h1").inner_text() == "Overview"
    assert page.locator(".summary .stat").first.locator("b").inner_text() != "0"
    page.click("nav >> text=Clusters")
    page.wait_for_selector("section.cluster")
    brokers = page.locator("section.cluster tbody tr")
    assert brokers.count() == 2
    assert {brokers.nth(i).locator("td").nth(3).inner_text() for i in range(2)} == {"V5_3_3"}


def watch_errors(page) -> list[str]:
    """Uncaught script errors and console errors (a missing favicon among them), as they happen."""
    errors = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(f"{m.text} ({m.location.get('url')})") if m.type == "error" else None)
    return errors


def still_the_page(page, heading: str | None = None) -> None:
    """The document was not replaced (django-htmx's debug script swaps the whole of it for an
    error answer): the top bar and the page's own heading are still there after a while."""
    page.wait_for_timeout(3_000)
    assert page.locator("header.topbar").count() == 1, page.content()[:2000]
    assert page.evaluate("window.__sameDocument") == 42
    if heading is not None:
        assert heading in page.locator("h1").first.inner_text()


def test_the_reset_form_opens_with_its_preview_box_and_previews_as_the_strategy_changes(
    page, live_server, polled, settled
):
    group = settled.lagging.group
    errors = watch_errors(page)
    log_in(page, live_server.url, "operator", f"/groups/local/{group}/")
    page.click("#reset-link")  # the group page's main action
    page.wait_for_url(f"**/groups/local/{group}/reset/")
    page.evaluate("window.__sameDocument = 42")
    # the form opens on a time reset: its first preview (htmx load trigger) asks for the time
    page.wait_for_selector("#preview #preview-prompt")
    assert "Choose a time" in page.locator("#preview").inner_text()
    still_the_page(page, "Reset the offsets of")
    assert page.locator("#reset-form #id_strategy").input_value() == "time"

    page.select_option("#id_strategy", "shift")
    page.fill("#id_shift", "0")  # refused by the strategy: the message is in the box, not a page
    page.wait_for_selector("#preview #preview-error")
    assert "non-zero" in page.locator("#preview-error").inner_text()
    still_the_page(page, "Reset the offsets of")

    page.select_option("#id_strategy", "earliest")
    page.wait_for_selector("#plan tr.plan-row")
    assert page.locator("#plan tr.plan-row").count() >= 1 and page.locator("#preview-error").count() == 0
    still_the_page(page, "Reset the offsets of")
    assert errors == [] and page.evaluate("window.__csp || []") == []


def test_the_main_pages_load_with_debug_on_and_keep_their_document(page, live_server, polled, settled, settings):
    """The other browser tests run with DEBUG off, as production does; this one and the next turn
    it on: django-htmx's debug script is then on every page, and it replaces the whole document
    with any 400/403/404/500 answer to an htmx request, which must not happen either."""
    settings.DEBUG = True
    group = settled.lagging.group
    errors = watch_errors(page)
    log_in(page, live_server.url, "operator", "/")
    pages = {
        "/": "Overview",
        "/groups/": None,
        f"/groups/local/{group}/": group,
        "/changes/": None,
        "/dlq/": None,
        "/stats/": None,
        "/reports/": None,
        "/stats/jobs/": None,
        "/clusters/": None,
        "/alerts/": "Alerts",
        "/audit/": None,
        "/account/tokens/": None,
    }
    for path, heading in pages.items():
        page.goto(live_server.url + path)
        assert page.locator("script[src*='django-htmx']").count() == 1  # the debug script is on the page
        page.evaluate("window.__sameDocument = 42")
        still_the_page(page, heading)
        assert errors == [], (path, errors)
    assert page.evaluate("window.__csp || []") == []


def test_the_admin_role_edits_a_health_override_on_the_clusters_admin_page(page, live_server, polled):
    log_in(page, live_server.url, "admin", f"/admin/consumers/cluster/{polled.pk}/change/")
    assert page.locator("text=known brokers").count() >= 1  # the brokers the poll learned are listed
    assert page.locator("td.field-name p", has_text="broker-a").count() == 1
    page.click("#health_overrides-group .add-row a")
    page.fill("#id_health_overrides-0-group", "G-override")
    page.fill("#id_health_overrides-0-stall_seconds", "120")
    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist .success")
    override = polled.health_overrides.get(group="G-override")
    assert override.stall_seconds == 120 and override.window_seconds is None
    assert page.evaluate("window.__csp || []") == []
