"""The Chinese interface beside the English one (locale/zh_Hans/, consumers/languages/).

Every visible text of the templates is marked for translation (identifiers aside), the
catalogue translates every message, without fuzzy entries, in the terms of its glossary; a
browser asking for Chinese gets the pages in Chinese, and a user's choice in the header is kept
on the user."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.template.base import Lexer, TokenType
from django.utils import translation

from consumers.languages.evidence import translate_evidence
from consumers.languages.models import LanguagePreference
from consumers.languages.preferences import language_for_address
from consumers.models import Cluster
from tests.conftest import PASSWORD
from tests.support.published import group, publish

TEMPLATES = Path(settings.BASE_DIR) / "templates"
CATALOGUE = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"

# Words a template may show untranslated: identifiers, units, names of formats and products,
# the health state names (see locale/zh_Hans/GLOSSARY.md)
IDENTIFIERS = {
    "ACL", "API", "B", "CRC", "CSV", "FIFO", "JSON", "PDF", "XLSX", "UTC", "TPS", "SLO", "DLQ", "gRPC", "POP",
    "sysFlag", "flag", "body", "msg", "s", "RETRY", "UNIQ_KEY", "REBALANCE_STORM",
}  # fmt: skip
# string literals that are identifiers: the html lang attribute's fallback
IDENTIFIER_LITERALS = {"'en'"}
# tags whose string arguments are names, formats or comparisons, not text
NAME_TAGS = {"url", "static", "include", "extends", "load", "now", "if", "elif", "with", "for", "firstof", "block"}
# filters whose string argument is shown to the reader
TEXT_FILTERS = ("default", "default_if_none")
# attributes a reader sees
SEEN_ATTRIBUTES = re.compile(r'\b(?:title|placeholder|aria-label|alt)="([^"]*)"')


def _visible_text(path: Path) -> tuple[list[str], list[str]]:
    """(texts outside translate tags, string literals shown unmarked) of one template."""
    source = path.read_text()
    tokens = Lexer(source).tokenize()
    parts, literals, depth = [], [], 0
    for token in tokens:
        content = token.contents
        if token.token_type == TokenType.BLOCK:
            name = content.split()[0] if content else ""
            if name in ("blocktranslate", "blocktrans", "comment"):
                depth += 1
            elif name in ("endblocktranslate", "endblocktrans", "endcomment"):
                depth -= 1
            elif depth == 0 and name not in NAME_TAGS and name not in ("translate", "trans"):
                literals += [s for s in _literals(content) if re.search(r"[A-Za-z]{2}", s)]
            parts.append("\x00")
        elif token.token_type == TokenType.VAR:
            if depth == 0:
                for filter_name, argument in re.findall(r"\|(\w+):(\"[^\"]*\"|'[^']*')", content):
                    shown = filter_name in TEXT_FILTERS and argument not in IDENTIFIER_LITERALS
                    if shown and re.search(r"[A-Za-z]{2}", argument):
                        literals.append(argument)
            parts.append("\x00")
        elif token.token_type == TokenType.TEXT and depth == 0:
            parts.append(content)
        elif token.token_type == TokenType.COMMENT:
            parts.append("\x00")
    text = "".join(parts)
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S)
    seen = SEEN_ATTRIBUTES.findall(text)
    text = re.sub(r"<[^>]*>", " ", text)
    words = []
    for chunk in [text, *seen]:
        for word in re.findall(r"[A-Za-z][A-Za-z_'’-]*", chunk.replace("&amp;", " ").replace("&nbsp;", " ")):
            if word not in IDENTIFIERS:
                words.append(word)
    return words, literals


def _literals(content: str) -> list[str]:
    """String literals of a tag, except _("...") (marked) ones."""
    found = []
    for match in re.finditer(r"(_\()?(\"[^\"]*\"|'[^']*')", content):
        if not match.group(1):
            found.append(match.group(2))
    return found


def test_every_template_marks_its_visible_text_for_translation():
    unmarked = {}
    for path in sorted(TEMPLATES.rglob("*.html")):
        words, literals = _visible_text(path)
        if words or literals:
            unmarked[str(path.relative_to(TEMPLATES))] = sorted(set(words)) + literals
    assert unmarked == {}


def test_the_template_check_finds_unmarked_text(tmp_path):
    """The check itself: text, a title attribute and a default shown to the reader are found;
    identifiers, translated text and names in tags are not."""
    sample = tmp_path / "sample.html"
    sample.write_text(
        '{% load i18n %}<p title="a tooltip">Plain words</p>{% translate "Fine" %} STALLED '
        '{{ x|default:"fallback text" }}{{ y|default:_("marked") }}{% url "consumers:home" %} DLQ 12 %\n'
        "{% blocktranslate trimmed %}Also fine {{ n }}{% endblocktranslate %}"
    )
    words, literals = _visible_text(sample)
    assert sorted(set(words)) == ["Plain", "STALLED", "a", "tooltip", "words"]
    assert literals == ['"fallback text"']


def _entries(path: Path) -> list[dict]:
    """The entries of a .po file (msgid, msgid_plural, msgstr[n], flags), header excluded."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry, key = {"flags": ""}, None
        for line in block.strip().splitlines():
            if line.startswith("#,"):
                entry["flags"] += line
                continue
            if line.startswith("#"):
                continue
            match = re.match(r'(msgid_plural|msgid|msgstr(?:\[\d\])?|msgctxt) "(.*)"$', line)
            if match:
                key = match.group(1)
                entry[key] = match.group(2)
            elif line.startswith('"') and key:
                entry[key] += line[1:-1]
        if entry.get("msgid"):
            entries.append(entry)
    return entries


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_chinese_catalogue_translates_every_message_and_nothing_is_fuzzy(domain):
    entries = _entries(CATALOGUE / f"{domain}.po")
    assert entries
    untranslated = [e["msgid"] for e in entries if not (e.get("msgstr") or e.get("msgstr[0]"))]
    fuzzy = [e["msgid"] for e in entries if "fuzzy" in e["flags"]]
    assert untranslated == [] and fuzzy == []


def test_the_catalogue_follows_the_glossary():
    """Every message naming a glossary term (checked in GLOSSARY.md) uses its Chinese term."""
    glossary = (CATALOGUE.parent / "GLOSSARY.md").read_text()
    checked = {
        "consumer group": "消费者组",
        "consumer offset": "消费位点",
        "lag": "堆积",
        "dead-letter queue": "死信队列",
        "retry queue": "重试队列",
        "reset the offsets": "重置",
        "topic": "主题",
        "audit log": "审计日志",
        "approval": "审批",
    }
    for english, chinese in checked.items():
        assert english and chinese in glossary
    wrong = []
    for entry in _entries(CATALOGUE / "django.po"):
        chinese = entry.get("msgstr") or entry.get("msgstr[0]", "")
        # placeholders, markup and examples of syntax (topic@broker#queue) are not prose
        english = re.sub(r"%\(\w+\)s|<[^>]*>|\S*[@#%]\S*", " ", entry["msgid"]).lower()
        for term, expected in checked.items():
            if re.search(rf"\b{re.escape(term)}\b", english) and expected not in chinese:
                wrong.append((entry["msgid"], term, chinese))
    assert wrong == []


@pytest.fixture
def east(db, redis, history_dir):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    publish(cluster, redis, [group("orders", lag=40), group("audit", lag=7, online=False, topic="A")])
    return cluster


CHINESE = {
    "/groups/": ["消费者组", "堆积", "健康状态", "死信队列"],
    "/groups/east/orders/": ["消费者组", "消费位点", "堆积", "重置位点", "队列"],
}
ENGLISH = ["Consumer groups", "Consumer offset", "Reset offsets", "Lag over time", "No group matches", "Log out"]


@pytest.mark.parametrize("path", list(CHINESE))
def test_a_browser_asking_for_chinese_gets_the_page_in_chinese(viewer_client, east, path):
    response = viewer_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5")
    html = response.content.decode()
    assert response.status_code == 200 and response["Content-Language"] == "zh-hans"
    assert '<html lang="zh-hans">' in html
    assert [term for term in CHINESE[path] if term not in html] == []
    assert [sentence for sentence in ENGLISH if sentence in html] == []
    assert "STOPPED" in html or "OK" in html  # the health state names stay as they are


def test_without_a_choice_the_site_default_is_english(viewer_client, east):
    response = viewer_client.get("/groups/")
    assert response["Content-Language"] == "en" and "Consumer groups" in response.content.decode()


def test_the_health_evidence_is_shown_in_the_readers_language(viewer_client, east):
    html = viewer_client.get("/groups/east/audit/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "没有在线的客户端，堆积为 7" in html and "no client is online" not in html
    api = viewer_client.get("/api/groups/east/audit/", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert api.status_code == 200  # the API keeps the English sentence (and its field names)
    assert "no client is online and lag is 7" in api.content.decode() and '"evidence"' in api.content.decode()


def test_evidence_is_parsed_back_and_anything_else_is_left_as_it_is():
    with translation.override("zh-hans"):
        assert translate_evidence("lag grew from 3 to 9 over 120s") == "120 秒内堆积从 3 增长到 9"
        assert (
            translate_evidence("stale data: no poll has read this group yet")
            == "数据已过期：尚无任何一次采集读到这个消费者组"
        )
        assert translate_evidence("something no format made") == "something no format made"
    with translation.override("en"):
        assert translate_evidence("lag grew from 3 to 9 over 120s") == "lag grew from 3 to 9 over 120s"


def test_sentences_joined_are_read_one_by_one_unless_one_format_made_the_whole():
    """A value inside a format (not its last) holds no "; ": two notes joined are not read as one
    whose value swallowed the end of the first and the start of the second; a value that does
    hold "; " (an error inside parentheses) is still read when nothing else is."""
    unread = "proxy %s could not be read (%s); the group's gRPC clients may be there"
    with translation.override("zh-hans"):
        two = translate_evidence("; ".join(unread % (p, "e") for p in ("A", "B")))
        assert two == "; ".join(f"无法读取代理 {p}（e）；该消费者组的 gRPC 客户端可能在那里" for p in ("A", "B"))
        inside = translate_evidence(unread % ("A", "x; y"))
        assert inside == "无法读取代理 A（x; y）；该消费者组的 gRPC 客户端可能在那里"
        # the last value may hold "; ": a list of reasons
        assert translate_evidence("incomplete: b not read; c not read") == "不完整：b 未读取; c 未读取"


def test_a_diagnostic_is_kept_in_english_and_shown_in_the_readers_language():
    """The poll writes diagnostics once, in English (the API's `message`); a page parses them back."""
    from consumers.live.diagnostics import POP_DROPS_FAILURES, UNHELD_QUEUES

    unheld = UNHELD_QUEUES % {"unheld": 2, "queues": 8, "clients": 3, "labels": "t@b#0, t@b#1"}
    drops = POP_DROPS_FAILURES % {"times": "16 (default)"}
    with translation.override("zh-hans"):
        assert translate_evidence(unheld) == "8 个队列中有 2 个没有任何客户端持有，而在线客户端有 3 个：t@b#0, t@b#1"
        assert "maxReconsumeTimes（16（默认））" in translate_evidence(drops)
    assert unheld == "2 of 8 queue(s) are held by no client while 3 client(s) are online: t@b#0, t@b#1"


def test_switching_language_in_the_header_is_kept_for_the_user_across_sessions(client, east, personas):
    viewer = personas["viewer"]
    client.force_login(viewer)
    page = client.get("/groups/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert 'id="language-switch"' in page and 'value="en"' in page
    # the switch: a POST (with the CSRF token of the page) back to the page it was on
    response = client.post("/language/", {"language": "en", "next": "/groups/"}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 302 and response["Location"] == "/groups/"
    assert LanguagePreference.objects.get(user=viewer).language == "en"
    assert "Consumer groups" in client.get("/groups/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    # a new session (another browser) of the same user, whose browser asks for Chinese
    other = type(client)()
    signed_in = other.post("/login/", {"username": "viewer", "password": PASSWORD}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert signed_in.status_code == 302
    html = other.get("/groups/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "Consumer groups" in html and "消费者组" not in html
    # and back to Chinese: the session that switched shows it at once, a later session too
    client.post("/language/", {"language": "zh-hans", "next": "/groups/"})
    assert "消费者组" in client.get("/groups/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    third = type(client)()
    third.force_login(viewer)
    assert "消费者组" in third.get("/groups/", HTTP_ACCEPT_LANGUAGE="en").content.decode()


def test_the_switch_refuses_an_unknown_language_a_get_and_a_foreign_return_address(viewer_client, east):
    assert viewer_client.post("/language/", {"language": "fr"}).status_code == 400
    assert viewer_client.get("/language/").status_code == 405
    response = viewer_client.post("/language/", {"language": "en", "next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == "/"


def test_the_switch_needs_the_csrf_token(personas):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(personas["viewer"])
    assert client.post("/language/", {"language": "zh-hans"}).status_code == 403


def test_notifications_use_the_recipients_language_where_known(personas, settings):
    viewer = personas["viewer"]
    viewer.email = "viewer@example.com"
    viewer.save()
    assert language_for_address("viewer@example.com") == settings.LANGUAGE_CODE
    LanguagePreference.objects.create(user=viewer, language="zh-hans")
    assert language_for_address("Viewer@Example.com") == "zh-hans"
    assert language_for_address("someone-else@example.com") == settings.LANGUAGE_CODE


def test_the_javascript_catalog_translates_the_scripts_strings(viewer_client):
    response = viewer_client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 200 and json.dumps("无法读取统计数据。")[1:-1] in response.content.decode()


# what makemessages reads, copied: it writes its catalogue beside the sources it walks
SOURCES = ("manage.py", "consumers", "dashboard", "templates", "static", "locale")
MAKEMESSAGES = ["makemessages", "-l", "zh_Hans", "--no-location", "--no-wrap", "--ignore=__pycache__"]


def test_makemessages_over_the_sources_leaves_nothing_untranslated_or_fuzzy(tmp_path):
    """The catalogue is not only complete in itself but complete for the sources: makemessages
    run now (on a copy) adds no message the committed catalogue lacks, nothing fuzzy."""
    for name in SOURCES:
        source = Path(settings.BASE_DIR) / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
        else:
            shutil.copy2(source, tmp_path / name)
    environment = {**os.environ, "DEBUG": "true", "PYTHONPATH": str(tmp_path)}
    for domain in ("django", "djangojs"):
        subprocess.run([sys.executable, "manage.py", *MAKEMESSAGES, "-d", domain], cwd=tmp_path, env=environment,
                       check=True, capture_output=True, timeout=300)  # fmt: skip
        made = _entries(tmp_path / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po")
        # by context too: pgettext("audit action", "request") is not the plain "request"
        committed = {(e.get("msgctxt"), e["msgid"]) for e in _entries(CATALOGUE / f"{domain}.po")}
        assert [e["msgid"] for e in made if (e.get("msgctxt"), e["msgid"]) not in committed] == [], domain
        assert [e["msgid"] for e in made if "fuzzy" in e["flags"]] == [], domain
        assert [e["msgid"] for e in made if not (e.get("msgstr") or e.get("msgstr[0]"))] == [], domain


@pytest.mark.parametrize(
    "path",
    ["/stats/", "/stats/?days=7", "/groups/east/orders/", "/audit/?since=2026-11-01&until=2026-11-21", "/reports/"],
)
def test_date_inputs_hold_iso_dates_in_chinese_too(viewer_client, east, path):
    """A browser's date input takes YYYY-MM-DD only: the Chinese format (2026/11/21) left every
    date field empty on the Chinese pages."""
    html = viewer_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    dates = re.findall(r'<input type="date"[^>]*>', html)
    assert dates, html[:2000]
    values = [re.search(r'value="([^"]*)"', d) for d in dates]
    assert all(v and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v.group(1)) for v in values), dates
