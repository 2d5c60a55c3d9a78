"""What the pages build from stored data, in the reader's language (consumers/languages/labels.py,
consumers/languages/evidence.py, consumers/templatetags/words.py): the notes of POP and
broadcasting groups, who knows a client, a group's message model, alerts' evidence, severities
and states, change states, audit actions and details, a change's verification notes, statistics
runs, the "lag now" download, the language switch and the 403 page. Stored data stays as it is
(English notes and evidence, codes): the API and the English pages read as before.

The pages of a whole world, in Chromium, are walked by tests/test_browser_chinese.py."""

from __future__ import annotations

import csv
import html as html_module
import io
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation
from openpyxl import load_workbook

from consumers import audit
from consumers.languages.evidence import translate_evidence
from consumers.languages.labels import AUDIT_ACTIONS, TABLES, label
from consumers.templatetags.words import details_text
from tests.support.world import build

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


@pytest.fixture(autouse=True)
def _site_language_afterwards():
    """A request activates its language for the thread: later tests start from the default."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def world(redis, history_dir, personas):
    return build(redis, personas)


def page(client, path: str, **headers) -> str:
    response = client.get(path, **headers)
    assert response.status_code == 200, path
    return response.content.decode()


def visible(html: str) -> str:
    """The page's text, without markup (class names and data attributes hold codes)."""
    return html_module.unescape(re.sub(r"<[^>]*>", " ", re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)))


def text_of(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</', html, re.S)
    assert found, element_id
    return found.group(1).strip()


def test_a_pop_group_page_says_its_notes_mode_and_proxy_in_chinese(viewer_client, world):
    html = page(viewer_client, "/groups/east/payments/", **ZH)
    assert text_of(html, "lag-seconds-measures").startswith("尚无人拉取的最早一条消息的存在时长")
    assert text_of(html, "tps-note") == "POP 速率：每秒分发出去的消息数，无论是否已确认"
    assert text_of(html, "in-flight-note") == "未知：此集群未启用 Broker 指标（集群的 Broker 指标 URL）"
    assert text_of(html, "message-model") == "集群消费"
    assert '<td class="known-to">代理（gRPC）</td>' in html
    assert "pop rate" not in html and "proxy (gRPC)" not in html and "CLUSTERING" not in html
    # the API (and the English page) keep what the poll stored
    api = viewer_client.get("/api/groups/east/payments/", **ZH).json()
    assert api["consume_tps_note"] == "pop rate: messages handed out per second, acknowledged or not"
    assert api["connections"][0]["via"] == "proxy (gRPC)" and api["message_model"] == "CLUSTERING"
    english = page(viewer_client, "/groups/east/payments/", HTTP_ACCEPT_LANGUAGE="en")
    assert '<td class="known-to">proxy (gRPC)</td>' in english and text_of(english, "message-model") == "CLUSTERING"


def test_a_broadcasting_group_is_named_so_on_its_page_and_in_the_list(viewer_client, world):
    assert text_of(page(viewer_client, "/groups/east/fanout/", **ZH), "message-model") == "广播消费"
    listed = page(viewer_client, "/groups/", **ZH)
    assert "<td>广播消费</td>" in listed and "<td>集群消费</td>" in listed and "BROADCASTING" not in listed
    with translation.override("zh-hans"):
        summed = translate_evidence("broadcasting: the sum of the rates the clients report")
        assert summed == "广播消费：各客户端报告的速率之和"
        never = translate_evidence("no committed offset: nobody has consumed this queue yet")
        assert never == "没有已提交的位点：尚无人消费过这个队列"


def test_a_queue_s_lag_note_is_in_chinese_in_its_tooltip():
    from consumers.templatetags.tables import queue_rows

    row = {"topic": "T", "broker": "b", "queue_id": 0, "min": 0, "max": 5, "consumer": None, "lag": None,
           "lag_seconds": None, "lag_seconds_note": "no committed offset: nobody has consumed this queue yet",
           "last_consume_ms": None, "clients": []}  # fmt: skip
    with translation.override("zh-hans"):
        assert 'title="没有已提交的位点：尚无人消费过这个队列"' in queue_rows([row])


def test_the_firing_alert_box_of_a_group_page_is_in_chinese(viewer_client, world):
    box = page(viewer_client, "/groups/east/audit/", **ZH).split('id="group-alerts"')[1].split("</section>")[0]
    assert "严重" in box and "STOPPED: 没有在线的客户端，堆积为 7" in box
    assert "critical" not in box and "no client is online" not in box


def test_the_alerts_page_says_evidence_severity_states_and_end_reasons_in_chinese(viewer_client, world):
    html = page(viewer_client, "/alerts/", **ZH)
    for chinese in ["严重", "警告", "STOPPED: 没有在线的客户端，堆积为 7", "已结束：健康状态为 OK", "已消除", "已解决",
                    "触发: <b>已发送</b>"]:  # fmt: skip
        assert chinese in html, chinese
    for english in ["critical", "warning", "no client is online", "above 60 s", "health is OK", "cleared", "resolved"]:
        assert english not in visible(html), english
    english = page(viewer_client, "/alerts/", HTTP_ACCEPT_LANGUAGE="en")
    assert "STOPPED: no client is online and lag is 7" in english and "cleared" in english


def test_changes_show_states_strategies_actions_and_verification_in_chinese(viewer_client, world):
    listed = page(viewer_client, "/changes/", **ZH)
    assert ">待审批</span>" in listed and ">已完成</span>" in listed and "重置位点: 最新（跳过堆积）" in listed
    assert ">pending<" not in listed and ">done<" not in listed and ": latest" not in listed
    reset = page(viewer_client, f"/changes/{world.reset.pk}/", **ZH)
    timeline = reset.split('id="timeline"')[1].split("</ol>")[0]
    assert [a for a in ("提交请求", "批准", "开始执行", "执行结果") if f"<b>{a}</b>" not in timeline] == []
    assert "<td>已是目标位点</td>" in reset and "holds the target" not in reset
    config = page(viewer_client, f"/changes/{world.config.pk}/", **ZH)
    assert "已是新值" in config and "holds the new values" not in config
    english = page(viewer_client, f"/changes/{world.config.pk}/", HTTP_ACCEPT_LANGUAGE="en")
    assert "holds the new values" in english and "<b>approve</b>" in english and ">done</span>" in english


def test_a_pending_change_says_since_then_only_with_what_moved(viewer_client, world):
    """A viewer may not decide: the broker is not read again, so the sentence that would
    introduce what moved since the preview (ending at its colon) is not said."""
    html = page(viewer_client, f"/changes/{world.pending.pk}/", **ZH)
    assert 'id="moved-since"' not in html and "此后 Broker 上" not in html


def test_a_verification_note_made_of_several_is_translated_part_by_part():
    with translation.override("zh-hans"):
        went_back = translate_evidence("holds the target; went back to 50 at +1.2 s")
        assert went_back == "已是目标位点; 曾在第 +1.2 秒退回到 50"
        assert translate_evidence("holds the target; consumed 3 since") == "已是目标位点；此后又消费了 3 条"
        overwritten = "overwritten by a client: it committed its position from before the reset (7)"
        assert translate_evidence(overwritten) == "被 某个客户端 覆盖：它提交了重置之前的位置（7）"
        assert translate_evidence("no format; made these") == "no format; made these"


def test_statistics_runs_name_their_trigger_and_state_in_chinese(viewer_client, world):
    html = page(viewer_client, "/stats/jobs/", **ZH)
    assert "<td>每夜</td>" in html and "页面 (operator)" in html and ">成功</span>" in html and ">失败</span>" in html
    assert "nightly" not in visible(html) and "succeeded" not in visible(html)


def test_the_audit_log_names_actions_and_shows_details_as_key_value_text(viewer_client, world):
    details = {"report": "now", "format": "csv", "rows": 3, "params": {"strategy": "latest"}, "groups": ["a", "b"]}
    audit.record("report-download", username="viewer", details=details)
    chinese = page(viewer_client, "/audit/", **ZH)
    assert "<td>下载报表</td>" in chinese and "<td>提交请求</td>" in chinese
    assert "<td>report-download</td>" not in chinese
    english = page(viewer_client, "/audit/", HTTP_ACCEPT_LANGUAGE="en")
    assert "<td>report-download</td>" in english
    for html in (chinese, english):  # both languages: never a Python repr
        assert "{&#x27;" not in html and "&#x27;:" not in html
        assert '<code>report</code>: now</span><br><span class="detail"><code>format</code>: csv' in html
        assert "<code>params.strategy</code>: latest" in html and "<code>groups</code>: a, b" in html


def test_details_text_flattens_and_escapes():
    html = str(details_text({"a": {"b": 1, "c": None}, "d": [{"x": True}], "e": "<b>", "f": []}))
    assert html == (
        '<span class="detail"><code>a.b</code>: 1</span><br><span class="detail"><code>a.c</code>: —</span><br>'
        '<span class="detail"><code>d</code>: [{&quot;x&quot;: true}]</span><br>'
        '<span class="detail"><code>e</code>: &lt;b&gt;</span><br><span class="detail"><code>f</code>: —</span>'
    )


def test_every_action_the_console_audits_has_a_name_in_each_language():
    """The audit actions written anywhere in consumers/ (audit.record's first argument, a
    transition's action=, an AUDIT_ACTION constant, the redrive controls) each have a label,
    translated: a new action without one would show as its code on a Chinese page."""
    source = "\n".join(p.read_text() for p in (Path(settings.BASE_DIR) / "consumers").rglob("*.py"))
    found = set(re.findall(r'(?:audit\.record\(\s*|_audit\(request, |\baction=|AUDIT_ACTION = )"([a-z-]+)"', source))
    found |= {f"redrive-{a}" for a in ("pause", "resume", "cancel")}  # audit.record(f"redrive-{action}")
    found |= {"grant-add", "grant-change"}  # "grant-change" if change else "grant-add"
    assert found - set(AUDIT_ACTIONS) == set()
    with translation.override("zh-hans"):
        untranslated = [(t, c) for t, table in TABLES.items() for c in table if label(t, c) == c]
    assert untranslated == []


def test_the_lag_now_download_is_in_the_readers_language_with_a_bom(viewer_client, world):
    body = b"".join(viewer_client.get("/reports/now.csv", **ZH).streaming_content)
    assert body.startswith("\ufeff集群,消费者组,主题,Broker,队列".encode())
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    assert {r["状态"] for r in rows} == {"正常"} and {r["消费者组"] for r in rows} >= {"orders", "payments"}
    english = b"".join(viewer_client.get("/reports/now.csv", HTTP_ACCEPT_LANGUAGE="en").streaming_content)
    assert english.startswith(b"\xef\xbb\xbfcluster,group,topic,")
    book = load_workbook(io.BytesIO(viewer_client.get("/reports/now.xlsx", **ZH).content))
    assert book.sheetnames == ["当前堆积"]
    assert next(book.active.iter_rows(values_only=True))[:3] == ("集群", "消费者组", "主题")


def test_the_language_switch_names_each_language_in_itself(viewer_client, world):
    for headers in (ZH, {"HTTP_ACCEPT_LANGUAGE": "en"}):
        switch = page(viewer_client, "/", **headers).split('id="language-switch"')[1].split("</form>")[0]
        assert re.findall(r'lang="[\w-]+">([^<]+)<', switch) == ["English", "简体中文"] and "英语" not in switch


def test_the_403_page_points_to_the_security_document_by_its_path(client, world, personas):
    client.force_login(personas["viewer"])
    for headers, words in ((ZH, "每个角色能看到和能做的事见 docs/security.md"), ({}, "is in docs/security.md")):
        response = client.get("/dlq/east/orders/export.csv", **headers)
        html = response.content.decode()
        assert response.status_code == 403 and words in html and "README" not in html
