"""What the pages build from stored data, in the reader's language (consumers/languages/labels.py,
consumers/languages/evidence.py, consumers/templatetags/words.py): the notes of POP and
broadcasting groups, who knows a client, a group's message model, alerts' evidence, severities
and states, change states, audit actions and details, a change's verification notes, statistics
runs, the "lag now" download, the language switch and the 403 page; why a group's clients are
unknown, why its queues are stale and its lag incomplete, why a queue's lag in seconds is unknown,
and the states of clusters, redrive jobs, API tokens and reports. Stored data stays as it is
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
    assert {r["重试主题"] for r in rows} == {"否"}  # the words for yes and no, never Python's False
    english = b"".join(viewer_client.get("/reports/now.csv", HTTP_ACCEPT_LANGUAGE="en").streaming_content)
    assert english.startswith(b"\xef\xbb\xbfcluster,group,topic,")
    english_rows = list(csv.DictReader(io.StringIO(english.decode("utf-8-sig"))))
    assert {r["retry topic"] for r in english_rows} == {"no"}
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


def test_why_a_groups_clients_are_unknown_is_said_in_chinese_and_stored_in_english(viewer_client, world, redis,
                                                                                    settings):  # fmt: skip
    from types import SimpleNamespace

    from consumers.live import proxy_grace
    from consumers.rocketmq import Problem
    from devstack.synthetic import group, publish

    settings.ROCKETMQ_PROXY_RESTART_GRACE = 90
    refused = "ConnectError: connection refused"
    asked = group("asked", online=None, problems=[Problem("connection", "asked", refused, "ConnectError")])
    proxies = group("proxied", online=False)
    # a proxy in its restart grace (worded by proxy_grace.hold, as a poll does) and one unreadable
    proxy_grace.hold(SimpleNamespace(groups={"proxied": proxies}), frozenset({"proxied"}), {"10.0.0.5:8081": 12.4})
    proxies.problems.append(Problem("proxy", "10.0.0.6:8081", refused, "ConnectError"))
    publish(world.cluster, redis, [asked, proxies, group("unasked", online=None)])
    expected = {
        "asked": f"没有 Broker 答复哪些客户端已连接（{refused}）",
        "proxied": "代理 10.0.0.5:8081 已于 12 秒前重启：它的 gRPC 客户端正在重新注册"
        f"（重启后 90 秒内它们为未知，而非已停止）; 无法读取代理 10.0.0.6:8081（{refused}）；"
        "该消费者组的 gRPC 客户端可能在那里",
        "unasked": "本次采集无法查询哪些客户端已连接",
    }
    for name, chinese in expected.items():
        html = page(viewer_client, f"/groups/east/{name}/", **ZH)
        assert text_of(html, "clients-unknown") == f"不知道是否有客户端在线：{chinese}。", name
        assert f'<span class="unknown" title="{html_module.escape(chinese)}">' in html, name
        for english in ("who is connected", "could not be read", "registering again", "may be there"):
            assert english not in visible(html), (name, english)
    api = viewer_client.get("/api/groups/east/proxied/", **ZH).json()
    assert api["clients_note"].startswith("proxy 10.0.0.5:8081 restarted 12 s ago: its gRPC clients are registering")
    assert api["clients_note"].endswith(f"proxy 10.0.0.6:8081 could not be read ({refused}); the group's gRPC clients "
                                        "may be there")  # fmt: skip


def _poll_with_brokers_down(cluster, redis, groups, brokers) -> None:
    """A poll as devstack.synthetic.publish makes one, with these brokers' states (failing, missing)."""
    import tempfile
    import time

    from consumers.live.brokers import BrokerReport
    from consumers.live.config import default_thresholds
    from consumers.live.history import HistoryStore, MemoryOffsets
    from consumers.live.lagtime import LagTime
    from consumers.live.publish import PollReading, publish_poll
    from consumers.rocketmq import ClusterSnapshot
    from consumers.rocketmq.models import ClusterInfo

    now = time.time()
    info = ClusterInfo(brokers={}, clusters={"DefaultCluster": [b.name for b in brokers]})
    snapshot = ClusterSnapshot(fetched_at=now, duration=0.1, cluster_info=info, brokers={},
                               groups={p.group: p for p in groups})  # fmt: skip
    # the first queue of each group not measured: its lag in seconds is unknown, and says why
    lag_times = {(p.group, q.queue): LagTime(1.0) for p in groups for q in p.queues[1:]}
    dlq_counts = {p.group: 0 for p in groups}
    reading = PollReading(snapshot=snapshot, polled_at=now, lag_times=lag_times, dlq_counts=dlq_counts)
    store = HistoryStore(Path(tempfile.mkdtemp(prefix="i18n-history-")), state=MemoryOffsets())
    publish_poll(cluster, reading, brokers=BrokerReport(brokers), redis=redis, history=store,
                 thresholds=default_thresholds(), overrides={}, started=time.monotonic())  # fmt: skip


def test_stale_queues_an_incomplete_lag_and_an_unlisted_group_say_why_in_chinese(viewer_client, world, redis):
    import dataclasses
    import time

    from consumers.live.documents import BrokerState
    from consumers.rocketmq import QueueProgress
    from devstack.synthetic import BROKER, group, publish

    def orders():
        progress = group("orders", lag=4, queues=2)
        progress.brokers = {"broker-a": BROKER.address}
        return progress

    first = orders()
    first.queues += [QueueProgress("T", b, 0, 100, 90, 0, 100, 1, ()) for b in ("broker-b", "broker-c")]
    publish(world.cluster, redis, [first, group("gone", lag=1)])
    now = time.time()
    failing = BrokerState("broker-b", "127.0.0.1:10921", state="failing", error="RequestTimeout: no response")
    missing = BrokerState("broker-c", "127.0.0.1:10931", state="missing", error="not in the name server",
                          last_seen_at=1795000000.0, missing_since=1795000030.0)  # fmt: skip
    brokers = [dataclasses.replace(BROKER, last_seen_at=now), failing, missing]
    _poll_with_brokers_down(world.cluster, redis, [orders()], brokers)
    b_why = "broker-b 无法读取：RequestTimeout: no response"
    c_missing = "自 2026-11-18 11:07:10 UTC 起缺失（NameServer 中已不存在；最近一次读取于 2026-11-18 11:06:40 UTC）"
    c_why = f"broker-c {c_missing}"
    html = page(viewer_client, "/groups/east/orders/", **ZH)
    assert text_of(html, "lag-incomplete") == f"不完整：{b_why}; {c_why}"
    assert 'title="Broker 无法读取：RequestTimeout: no response"' in html
    assert f'title="{c_missing}"' in html
    assert 'title="未测量"' in html  # the queue whose lag in seconds was not measured
    for english in ("incomplete:", "broker unreadable", "missing since", "not in the name server", "not measured"):
        assert english not in html, english
    gone = page(viewer_client, "/groups/east/gone/", **ZH)
    listed = f"本次采集未列出：broker-b: 无法读取：RequestTimeout: no response; broker-c: {c_missing}"
    assert f"最近一次采集未读取：{listed}。" in html_module.unescape(gone) and "not listed" not in gone
    groups = html_module.unescape(page(viewer_client, "/groups/", **ZH))
    assert f'title="不完整：{b_why}; {c_why}"' in groups and f'title="{listed}"' in groups
    assert "incomplete:" not in groups and "not listed" not in groups
    clusters = page(viewer_client, "/clusters/", **ZH)
    assert '<span class="badge stale">降级</span>' in clusters and ">degraded<" not in clusters
    # the API (and the English page) keep what the poll stored
    api = viewer_client.get("/api/groups/east/orders/", **ZH).json()
    b_english = "broker-b broker unreadable: RequestTimeout: no response"
    c_english = "missing since 2026-11-18 11:07:10 UTC (not in the name server; last read 2026-11-18 11:06:40 UTC)"
    assert api["lag_incomplete"] == f"incomplete: {b_english}; broker-c {c_english}"
    english = page(viewer_client, "/groups/east/orders/", HTTP_ACCEPT_LANGUAGE="en")
    assert text_of(english, "lag-incomplete") == api["lag_incomplete"]


def test_why_a_queues_lag_in_seconds_is_unknown_is_in_chinese_in_its_tooltip(redis):
    import asyncio
    from types import SimpleNamespace

    from consumers.live import building, lagtime
    from consumers.rocketmq import GroupProgress, QueueProgress, RocketMQError
    from consumers.rocketmq.models import PullResult
    from consumers.templatetags.tables import queue_rows

    async def pull(mq, offset, max_nums):
        if mq.queue_id == 0:
            raise RocketMQError("RequestTimeout: no response")
        return PullResult("NO_MATCHED_MSG", offset, 0, 100)

    progress = GroupProgress(group="G", fetched_at=1.0, online=True)
    progress.queues = [QueueProgress("T", "b", i, 100, 90, 0, 100, 1, ()) for i in range(3)]
    client = SimpleNamespace(messages=SimpleNamespace(pull=pull))
    measured = asyncio.run(lagtime.measure(client, [progress], now_ms=2000, redis=redis, cache_key="lt", budget=2))
    doc = building.build_document(progress, lag_times=measured, dlq_count=0, previous=None)
    notes = [q.lag_seconds_note for q in doc.queues]  # English in the document, as the API gives them
    assert notes == ["could not read the message at offset 90: RequestTimeout: no response",
                     "no message at offset 90 (NO_MATCHED_MSG)",
                     "not measured yet (over the 2 lookups a poll may make)"]  # fmt: skip
    unmeasured = building.build_document(progress, lag_times={}, dlq_count=0, previous=None).to_wire()["queues"][0]
    with translation.override("zh-hans"):
        html = queue_rows(doc.to_wire()["queues"] + [unmeasured])
        assert translate_evidence("message not found") == "未找到消息"
    for chinese in ["无法读取位点 90 上的消息：RequestTimeout: no response", "位点 90 上没有消息（NO_MATCHED_MSG）",
                    "尚未测量（超出了每次采集最多 2 次的查询）", "未测量"]:  # fmt: skip
        assert f'title="{chinese}"' in html, chinese
    assert "could not read" not in html and "no message" not in html and "not measured" not in html


def test_clusters_redrive_jobs_tokens_and_reports_name_their_states_in_chinese(viewer_client, world, personas):
    import datetime as dt

    from django.utils import timezone

    from consumers.dlq.models import RedriveJob
    from consumers.identity import ApiToken
    from consumers.reports.models import Report

    for path in ("/", "/clusters/"):
        html = page(viewer_client, path, **ZH)
        assert '<span class="badge ok">正常</span>' in html or '">正常</span>' in html, path
        assert ">ok</span>" not in html, path
    assert text_of(page(viewer_client, "/groups/east/orders/", **ZH), "cluster-state") == "正常"
    job = RedriveJob.objects.create(cluster=world.cluster, group="orders", target="group", rate=10, state="paused",
                                    created_by=personas["operator"])  # fmt: skip
    html = page(viewer_client, f"/dlq/jobs/{job.pk}/", **ZH)
    assert text_of(html, "job-state") == "已暂停" and ">paused<" not in html
    past = timezone.now() - dt.timedelta(days=1)
    ApiToken.objects.create(user=personas["viewer"], name="ci", prefix="abc123", digest="0" * 64)
    ApiToken.objects.create(user=personas["viewer"], name="old", prefix="abc124", digest="1" * 64, expires_at=past)
    ApiToken.objects.create(user=personas["viewer"], name="gone", prefix="abc125", digest="2" * 64, revoked_at=past)
    tokens = page(viewer_client, "/account/tokens/", **ZH)
    assert re.findall(r'<td class="token-state">([^<]*)</td>', tokens) == ["已撤销", "已过期", "有效"]
    Report.objects.create(title="east lag", clusters=["east"], first=past.date(), last=past.date(), formats=["csv"],
                          created_by=personas["viewer"], expires_at=timezone.now() + dt.timedelta(days=30))  # fmt: skip
    reports = page(viewer_client, "/reports/", **ZH)
    assert '<span class="muted">排队中</span>' in reports and ">queued<" not in reports
    english = page(viewer_client, "/reports/", HTTP_ACCEPT_LANGUAGE="en")
    assert '<span class="muted">queued</span>' in english


def test_the_lag_now_csv_says_yes_and_no_in_the_readers_language():
    from consumers.reports.live import COLUMNS, live_csv_lines

    rows = [{key: None for key, _label, _kind in COLUMNS} | {"group": "G", "retry": retry} for retry in (True, False)]
    for language, words in (("zh-hans", ["是", "否"]), ("en", ["yes", "no"])):
        with translation.override(language):
            lines = list(live_csv_lines(rows))
        retry = [r[5] for r in csv.reader(io.StringIO("".join(lines[1:])))]
        assert retry == words, language


def test_in_flight_unknown_for_want_of_a_brokers_metrics_is_said_in_chinese(settings):
    import asyncio
    from types import SimpleNamespace

    from consumers.live import notes, reading
    from consumers.rocketmq.snapshot import BrokerStatus

    settings.ROCKETMQ_BROKER_DEADLINE = 1.0
    snapshot = SimpleNamespace(brokers={"broker-a": BrokerStatus("broker-a", "127.0.0.1:10911")})
    found, why = asyncio.run(reading.in_flight(SimpleNamespace(broker_metrics="other=http://127.0.0.1:9/"), snapshot))
    note = notes.IN_FLIGHT_UNKNOWN % {"why": why}  # as building.py stores it
    assert found is None
    assert note == "unknown: broker metrics not read: broker-a: no metrics URL, or the broker itself unreadable"
    with translation.override("zh-hans"):
        assert translate_evidence(note) == "未知：未能读取 Broker 指标：broker-a：没有指标 URL，或 Broker 本身无法读取"
