"""The pages at a laptop's 1280 px, in English and in Chinese: the header keeps each item on
one line, and no page is wider than the window (a wide table scrolls in its own box, long prose
in a cell wraps). The world is tests/support/world.py's (no RocketMQ), with the alerts and the
long evidence it holds."""

from __future__ import annotations

import pytest

from tests.conftest import new_context
from tests.support.world import build
from tests.test_browser import log_in

pytestmark = pytest.mark.browser

WIDTH = 1280
PAGES = ["/", "/clusters/", "/groups/", "/groups/abandoned/", "/groups/east/orders/", "/changes/", "/alerts/", "/dlq/",
         "/audit/"]  # fmt: skip

# the lines each header item's text takes (a flex item's own box is as tall as the bar: its
# text's line boxes are what wrapping changes)
HEADER_ITEMS = """() => [...document.querySelectorAll(".topbar nav a, .topbar .who > *")].map(e => {
  const range = document.createRange();
  range.selectNodeContents(e);
  const rects = [...range.getClientRects()].filter(r => r.width > 0);
  const span = Math.max(...rects.map(r => r.bottom)) - Math.min(...rects.map(r => r.top));
  const line = parseFloat(getComputedStyle(e).lineHeight);
  return {text: e.textContent.trim().slice(0, 30), lines: Math.round(span / line)};
})"""


@pytest.fixture
def world(redis, history_dir, personas):
    return build(redis, personas)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_at_1280_px_the_header_keeps_its_items_on_one_line_and_no_page_is_wider_than_the_window(
    browser, live_server, world
):
    context = new_context(browser, viewport={"width": WIDTH, "height": 800})
    page = context.new_page()
    try:
        base = live_server.url
        log_in(page, base, "operator", "/")
        wide, wrapped = {}, {}
        for language in ("en", "zh-hans"):
            if language != "en":
                page.click(f"#language-switch button[value={language}]")
                page.wait_for_selector(f"html[lang={language}]")
            for path in PAGES:
                assert page.goto(base + path).status == 200, path
                page.wait_for_load_state("networkidle")
                if path == "/groups/abandoned/":  # watched 30 days, audit's clients never seen
                    assert page.locator('#abandoned tr[data-group="audit"]').count() == 1
                width = page.evaluate("document.documentElement.scrollWidth")
                if width > WIDTH:
                    wide[(language, path)] = width
                items = page.evaluate(HEADER_ITEMS)
                broken = [i for i in items if i["lines"] > 1]
                if broken:
                    wrapped[(language, path)] = broken
        assert wide == {}, wide
        assert wrapped == {}, wrapped
    finally:
        context.close()
