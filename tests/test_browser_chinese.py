"""The main pages in Chromium, in Simplified Chinese: no English on them.

Every template string is translated (tests/test_i18n.py), and so must be what the pages build
from data: notes and evidence the poll and the workers store in English, the codes of states,
actions and triggers. An operator switches to 简体中文 in the header and walks the overview,
clusters, groups (a group of every kind), changes (a reset verified, a config change read back,
one pending), alerts, DLQ, message search, statistics and its jobs, reports and the audit log of
a world published with devstack/synthetic.py (tests/support/world.py; no RocketMQ). Any visible
text run holding an ASCII word that is neither a name of that world nor one the glossary keeps
in English (locale/zh_Hans/GLOSSARY.md) fails the test, with the page and the run. Identifiers
set apart by their markup (code, pre, .mono, translate="no": client ids, queue labels, field
names, an audit event's stored details) are not prose and are not read."""

from __future__ import annotations

import re

import pytest

from tests.support.world import NAMES, build
from tests.test_browser import log_in

pytestmark = pytest.mark.browser

# what the glossary keeps in English, and the health state names
KEPT = {
    "OK", "STALLED", "STOPPED", "PAUSED", "OFFSET_EXPIRED", "DLQ_GROWING", "RETRY_STORM", "REBALANCE_STORM",
    "FALLING_BEHIND", "CATCHING_UP", "IDLE", "UNKNOWN",
    "CSV", "XLSX", "PDF", "JSON", "TPS", "SLO", "UTC", "gRPC", "POP", "ACL", "SDK", "UNIQ_KEY", "FIFO", "PySpark",
    "spark-submit", "Redis", "DLQ", "Broker", "NameServer", "Proxy", "Tag", "Key", "ID", "RocketMQ", "rocketmq-proxy",
    "API", "URL", "Master",
    # RocketMQ's names for how clients consume (consumption labels) and the clients' languages
    "Push", "Pull", "Remoting", "SimpleConsumer", "PushConsumer", "JAVA",
    # roles (identifiers: grants use them), the cluster states shown as they are, a shell pattern
    "viewer", "operator", "approver", "admin", "system", "ok", "shell", "shop",
    # units
    "s", "ms", "min", "h", "d",
    # the language switch names English in English
    "English",
}  # fmt: skip
# terms of the catalogue that are two words
KEPT_PHRASES = ("offset ID",)
ALLOWED = KEPT | set(NAMES)
# a token holding a digit or one of these names something (a queue label, an address, a path)
IDENTIFIER = re.compile(r"[\d@#%/_.]")

# the visible text runs of the page outside identifiers' markup, and each visible select's choice
VISIBLE_TEXT = """() => {
  const skip = "script, style, noscript, template, code, pre, .mono, [translate=no], select";
  const runs = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim(), parent = node.parentElement;
    if (!text || !parent || parent.closest(skip)) continue;
    if (!parent.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    runs.push(text);
  }
  for (const select of document.querySelectorAll("select")) {
    if (select.checkVisibility() && select.selectedOptions.length) runs.push(select.selectedOptions[0].text.trim());
  }
  return runs;
}"""


def english_words(run: str) -> list[str]:
    for phrase in KEPT_PHRASES:
        run = run.replace(phrase, " ")
    found = []
    for token in re.findall(r"[A-Za-z][\w@#%/.:'-]*", run):
        token = token.rstrip(".:-'")
        if token in ALLOWED or IDENTIFIER.search(token):
            continue
        found.append(token)
    return found


def test_the_check_finds_english_and_passes_names_and_kept_terms():
    assert english_words("消费 TPS 2.5 · orders@east T@broker-a#0 OK") == []
    assert english_words("模式 CLUSTERING, pop rate: messages") == ["CLUSTERING", "pop", "rate", "messages"]
    assert english_words("Broker 的 offset ID；由 operator 来自 10.0.0.1") == []


@pytest.fixture
def world(redis, history_dir, personas):
    return build(redis, personas)


# transactional: the live server runs in another thread; serialized rollback keeps the role
# groups the migration created across tests
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_main_pages_in_chinese_show_no_english(page, live_server, world):
    base = live_server.url
    log_in(page, base, "operator", "/")
    page.click("#language-switch button[value=zh-hans]")
    page.wait_for_selector("html[lang=zh-hans]")
    # each language named in itself, whatever the page's language
    assert page.locator("#language-switch [lang]").all_inner_texts() == ["English", "简体中文"]
    pages = [
        "/", "/clusters/", "/groups/", *(f"/groups/east/{g}/" for g in ("orders", "audit", "fanout", "payments",
        "popper")), "/changes/", *(f"/changes/{c.pk}/" for c in (world.reset, world.config, world.pending)),
        "/alerts/", "/dlq/", "/messages/", "/stats/", "/stats/jobs/", "/reports/", "/audit/",
    ]  # fmt: skip
    english = {}
    for path in pages:
        response = page.goto(base + path)
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")  # the fragments and charts a page loads after it
        found = [(run, words) for run in page.evaluate(VISIBLE_TEXT) for words in [english_words(run)] if words]
        if found:
            english[path] = found
    shown = [f"{path}: {run!r} {words}" for path, found in english.items() for run, words in found]
    assert english == {}, "\n".join(shown)
    assert page.evaluate("window.__csp || []") == []
