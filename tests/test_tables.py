"""The groups list's rows and a group's queue rows, built in Python (consumers/templatetags/tables.py):
the markup the templates made, escaped, unknowns marked with why, in the reader's language."""

from __future__ import annotations

from django.template import Context, Template
from django.utils import translation

from consumers.live.selectors import GroupRow
from consumers.models import Cluster

EAST = Cluster(name="east", pk=1)


def rows_html(rows: list) -> str:
    return Template("{% load tables %}{% group_list_rows rows %}").render(Context({"rows": rows}))


def queues_html(queues: list) -> str:
    return Template("{% load tables %}{% queue_rows queues %}").render(Context({"queues": queues}))


def summary(**fields) -> dict:
    return {
        "group": "orders", "message_model": "CLUSTERING", "consumption": "push", "clients": 2, "topics": ["t"],
        "lag": 12345, "lag_seconds": 2.25, "consume_tps": 10.0, "retry_lag": 0, "dlq_count": 3,
        "health": {"state": "OK", "findings": []}, **fields,
    }  # fmt: skip


def test_a_row_has_its_link_numbers_and_health():
    html = rows_html([GroupRow(EAST, summary(), 12.0, False)])
    assert html.startswith('<tr data-group="orders" data-cluster="east"><td><a href="/groups/east/orders/">orders</a>')
    assert '<td class="num lag">12,345</td><td class="num">2.2</td><td class="num">10.0</td>' in html
    assert '<td class="num">0</td><td class="num">3</td>' in html  # no retry lag is 0; 3 dead letters
    assert '<span class="badge OK" title="">OK</span>' in html and ">12 s</td></tr>" in html


def test_names_and_reasons_are_escaped_and_unknowns_say_why():
    row = GroupRow(
        EAST,
        summary(group="g<b>&'", lag=None, retry_lag=None, stale_reason='broker "a" <down>', clients=None,
                topics=["x" * 70], health={"state": "X", "findings": [{"state": "STALLED", "evidence": "a <b>"}]}),
        400.0,
        True,
    )  # fmt: skip
    html = rows_html([row])
    assert 'data-group="g&lt;b&gt;&amp;&#x27;"' in html and 'class="stale"' in html and "<b>" not in html
    assert '<a href="/groups/east/g%3Cb%3E&amp;&#x27;/">g&lt;b&gt;&amp;&#x27;</a>' in html
    reason = "broker &quot;a&quot; &lt;down&gt;"
    assert f'<td class="num lag"><span class="unknown" title="{reason}">unknown</span>' in html
    assert '<span class="unknown" title="clients unknown">unknown</span>' in html
    assert "x" * 59 + "…</td>" in html  # topics cut at 60 characters
    assert 'title="STALLED: a &lt;b&gt;&#10;">UNKNOWN</span>' in html  # stale: health unknown, findings kept
    assert f'<td class="num stale" title="{reason}">7 min</td>' in html


def test_queue_rows_mark_retry_stale_expired_and_uncommitted():
    html = queues_html(
        [
            {"topic": "t", "broker": "broker-a", "queue_id": 0, "min": 0, "max": 1500, "consumer": 1000, "lag": 500,
             "lag_seconds": 1.5, "last_consume_ms": 1_700_000_000_000, "clients": ["c1", "c2"]},
            {"topic": "%RETRY%g", "retry": True, "broker": "broker-b", "queue_id": 3, "min": None, "max": None,
             "consumer": None, "lag": None, "lag_seconds": None, "lag_seconds_note": "no <time>",
             "stale_reason": "timeout", "as_of": 1_700_000_000, "expired": True, "clients": []},
        ]
    )  # fmt: skip
    first, second = html.split("\n")
    assert first == (
        '<tr class="queue" data-topic="t" data-broker="broker-a" data-queue="0"><td>t</td><td>broker-a</td>'
        '<td class="num">0</td><td class="num min">0</td><td class="num max">1,500</td>'
        '<td class="num consumer">1000</td><td class="num lag">500</td><td class="num">1.5</td>'
        '<td>2023-11-14 22:13:20</td><td class="mono">c1, c2</td></tr>'
    )
    assert second.startswith(
        '<tr class="queue retry stale" data-topic="%RETRY%g" data-broker="broker-b" data-queue="3" title="timeout">'
    )
    assert (
        '<span class="muted">(retry)</span><div class="stale-note error">as of 2023-11-14 22:13:20 UTC: timeout</div>'
        in second
    )
    assert '<span class="unknown" title="min offset unknown">unknown</span>' in second
    assert '<span class="unknown" title="no committed offset">none</span>' in second
    assert '<span class="unknown" title="no &lt;time&gt;">unknown</span> <span class="badge OFFSET_EXPIRED"' in second
    assert '<td>—</td><td class="mono">—</td></tr>' in second


def test_in_chinese():
    with translation.override("zh-hans"):
        rows = rows_html([GroupRow(EAST, summary(clients=None, lag_partial=True), 5.0, False)])
        queues = queues_html([{"topic": "t", "retry": True, "broker": "b", "queue_id": 1, "consumer": None}])
    assert 'title="客户端未知">未知</span>' in rows and "其中一部分沿用自更早的采集" in rows
    assert "（重试）" in queues and 'title="没有已提交的位点">无</span>' in queues
