"""The two largest tables on the pages people keep open, the groups list's rows and a group's
queues, built in Python rather than in a template loop (as console.plan_rows is): 100 rows of
13 cells cost about 80 ms in the template engine and 40 ms more through format_html's lazy
escaping, most of a 10,000-group list's time. Plain string building, with the translations and
number formats looked up once per table, takes a few milliseconds. The markup is the one the
templates had."""

from __future__ import annotations

import functools
from html import escape

from django import template
from django.urls import get_script_prefix, reverse
from django.utils import numberformat
from django.utils.formats import get_format
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.utils.translation import gettext, gettext_noop

from ..languages.labels import MESSAGE_MODELS
from .console import age, consumption_label, epoch, epoch_ms, evidence
from .drain import drain_short, drain_text

register = template.Library()

# the cells' fixed texts (marked for makemessages, translated per table)
TEXTS = {
    "clients": gettext_noop("clients unknown"),
    "lag_seconds": gettext_noop("some lagging queue could not be measured"),
    "tps": gettext_noop("TPS unknown"),
    "dlq": gettext_noop("the DLQ could not be read"),
    "warnings": gettext_noop("allocation warnings"),
    "retry_name": gettext_noop("retry-topic name"),
    "incomplete": gettext_noop("incomplete"),
    "partial": gettext_noop("part of it carried over from an earlier poll"),
    "retry": gettext_noop("(retry)"),
    "min": gettext_noop("min offset unknown"),
    "max": gettext_noop("max offset unknown"),
    "no_commit": gettext_noop("no committed offset"),
    "none": gettext_noop("none"),
    "expired_why": gettext_noop("consumer offset below the min offset"),
    "expired": gettext_noop("expired"),
    "for_tags": gettext_noop("for its tags"),
    "estimated": gettext_noop("estimated: not every message was counted this poll"),
    "not_counted": gettext_noop("not counted"),
}


class _Cells:
    """What every row shares: the texts in the reader's language and the number formats."""

    def __init__(self):
        self.decimal, self.thousand, self.grouping = (
            get_format(name) for name in ("DECIMAL_SEPARATOR", "THOUSAND_SEPARATOR", "NUMBER_GROUPING")
        )
        self.unknown = escape(gettext("unknown"))
        self.not_known = gettext("not known")
        # as they read (a cell's tooltip when unknown: known() escapes them) and escaped (markup)
        self.why = {key: gettext(text) for key, text in TEXTS.items()}
        self.texts = {key: escape(text) for key, text in self.why.items()}
        self.as_of = gettext("as of %(as_of)s: %(reason)s")
        self.made_from_retry = gettext(
            "the broker created this group when something was sent to %(topic)s: not a consumer group"
        )
        # CLUSTERING, BROADCASTING: the glossary's words for them (languages/labels.py)
        self.models = {code: escape(str(word)) for code, word in MESSAGE_MODELS.items()}
        # a queue's lag-seconds note, a stale reason, why a lag total is incomplete (English as
        # stored: languages/evidence.py), translated once per table
        self.notes: dict[str, str] = {}

    def note(self, text: str | None) -> str:
        if not text:
            return ""
        if text not in self.notes:
            self.notes[text] = evidence(text)
        return self.notes[text]

    def known(self, value, why: str = "") -> str:
        """console.known's markup: the value, or "unknown" with why in its tooltip."""
        if value is None:
            return f'<span class="unknown" title="{escape(why or self.not_known)}">{self.unknown}</span>'
        if isinstance(value, float):
            return self._number(value, 1)
        if isinstance(value, int) and not isinstance(value, bool):
            return self._number(value, None)
        return escape(str(value))

    def _number(self, value, positions) -> str:
        return numberformat.format(
            value, self.decimal, positions, self.grouping, self.thousand, force_grouping=True, use_l10n=True
        )

    def link(self, cluster: str, group: str) -> str:
        return _link(get_script_prefix(), cluster, group)

    def name(self, row) -> str:
        s = row.summary
        html = f'<a href="{self.link(row.cluster.name, s["group"])}">{escape(s["group"])}</a>'
        if s.get("warnings"):
            count = escape(str(s["warnings"]))
            html += f' <span class="badge FALLING_BEHIND" title="{self.texts["warnings"]}">{count}</span>'
        if s.get("made_from_retry_topic"):
            why = escape(self.made_from_retry % {"topic": s["made_from_retry_topic"]})
            html += f' <span class="badge stale made-from-retry" title="{why}">{self.texts["retry_name"]}</span>'
        return html

    def model(self, code: str | None) -> str:
        return self.models.get(code) or escape(code or "—")

    def lag(self, s: dict) -> str:
        html = self.known(s.get("lag"), self.note(s.get("stale_reason")))
        if s.get("lag_incomplete"):
            why = escape(self.note(s["lag_incomplete"]))
            html += f' <span class="incomplete error" title="{why}">{self.texts["incomplete"]}</span>'
        elif s.get("lag_partial"):
            html += f'<span title="{self.texts["partial"]}">*</span>'
        if s.get("tag_filters"):
            filters = "; ".join(f"{t} {e}" for t, e in sorted(s["tag_filters"].items()))
            html += self.tag_lag(s.get("tag_lag"), s.get("tag_lag_estimated"), filters, self.why["not_counted"])
        return html

    def tag_lag(self, value: int | None, estimated: bool, title: str, why: str) -> str:
        """What a tag-filtered group's tags take of a lag: "for its tags: 5,930" under it."""
        mark = f'<span title="{self.texts["estimated"]}">≈</span>' if estimated else ""
        figure = self.known(value, why)
        return f'<div class="tag-lag muted" title="{escape(title)}">{self.texts["for_tags"]}: {mark}{figure}</div>'

    def row(self, row) -> str:
        s = row.summary
        group, cluster, health = escape(s["group"]), escape(row.cluster.name), escape(row.health)
        consumption = s.get("consumption") or ""
        fifo = ' <span class="badge fifo">FIFO</span>' if s.get("fifo") else ""
        label = escape(consumption_label(consumption))
        findings = "".join(
            escape(f"{f['state']}: {evidence(f['evidence'])}") + "&#10;"
            for f in (s.get("health") or {}).get("findings", ())
        )
        topics = escape(_shortened(", ".join(s.get("topics") or ()), 60))
        stale_reason = self.note(s.get("stale_reason"))
        stale_row, stale_cell = (' class="stale"', " stale") if row.stale else ("", "")
        drain = s.get("drain") or {}
        return (
            f'<tr data-group="{group}" data-cluster="{cluster}"{stale_row}>'
            f"<td>{self.name(row)}</td><td>{cluster}</td><td>{self.model(s.get('message_model'))}</td>"
            f'<td class="consumption" data-consumption="{escape(consumption)}">{label}{fifo}</td>'
            f'<td class="num">{self.known(s.get("clients"), self.why["clients"])}</td><td>{topics}</td>'
            f'<td class="num lag">{self.lag(s)}</td>'
            f'<td class="num">{self.known(s.get("lag_seconds"), self.why["lag_seconds"])}</td>'
            f'<td class="num">{self.known(s.get("consume_tps"), self.why["tps"])}</td>'
            f'<td class="num">{self.known(s.get("retry_lag"), stale_reason)}</td>'
            f'<td class="num">{self.known(s.get("dlq_count"), self.why["dlq"])}</td>'
            f'<td class="num drain" data-drain="{escape(drain.get("state") or "")}"'
            f' title="{escape(drain_text(drain))}">{escape(drain_short(drain))}</td>'
            f'<td><span class="badge {health}" title="{findings}">{health}</span></td>'
            f'<td class="num{stale_cell}" title="{escape(stale_reason)}">{escape(age(row.age))}</td></tr>'
        )

    def queue(self, q: dict) -> str:
        texts, reason = self.texts, q.get("stale_reason")
        classes = "queue" + (" retry" if q.get("retry") else "") + (" stale" if reason else "")
        topic, broker, queue_id = escape(q["topic"]), escape(q["broker"]), escape(str(q["queue_id"]))
        title, note = "", ""
        if reason:
            reason = self.note(reason)
            title = f' title="{escape(reason)}"'
            stale = escape(self.as_of % {"as_of": epoch(q.get("as_of")), "reason": reason})
            note = f'<div class="stale-note error">{stale}</div>'
        retry = f' <span class="muted">{texts["retry"]}</span>' if q.get("retry") else ""
        if q.get("consumer") is None:
            consumer = f'<span class="unknown" title="{texts["no_commit"]}">{texts["none"]}</span>'
        else:
            consumer = escape(str(q["consumer"]))
        why = self.note(q.get("lag_seconds_note"))
        tagged = ""
        if q.get("tag_lag") is not None or q.get("tag_lag_note"):
            note = self.note(q.get("tag_lag_note"))
            tagged = self.tag_lag(q.get("tag_lag"), q.get("tag_lag") is not None and bool(note), note, note)
        expired = ""
        if q.get("expired"):
            expired = f' <span class="badge OFFSET_EXPIRED" title="{texts["expired_why"]}">{texts["expired"]}</span>'
        return (
            f'<tr class="{classes}" data-topic="{topic}" data-broker="{broker}" data-queue="{queue_id}"{title}>'
            f'<td>{topic}{retry}{note}</td><td>{broker}</td><td class="num">{queue_id}</td>'
            f'<td class="num min">{self.known(q.get("min"), self.why["min"])}</td>'
            f'<td class="num max">{self.known(q.get("max"), self.why["max"])}</td>'
            f'<td class="num consumer">{consumer}</td>'
            f'<td class="num lag">{self.known(q.get("lag"), why)}{expired}{tagged}</td>'
            f'<td class="num">{self.known(q.get("lag_seconds"), why)}</td>'
            f"<td>{escape(epoch_ms(q.get('last_consume_ms')))}</td>"
            f'<td class="mono">{escape(", ".join(q.get("clients") or ()) or "—")}</td></tr>'
        )


@functools.lru_cache(maxsize=20_000)
def _link(prefix: str, cluster: str, group: str) -> str:
    """A group's page link, escaped: the same rows come back every 5 s, and reversing costs more
    than the rest of their row (`prefix`: the script prefix reverse() puts first)."""
    return escape(reverse("consumers:group-detail", args=[cluster, group]))


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else Truncator(text).chars(limit)  # the truncation mark in the reader's language


@register.simple_tag
def group_list_rows(rows: list):
    """The rows (selectors.GroupRow) of the groups list's table."""
    cells = _Cells()
    return mark_safe("\n".join(cells.row(row) for row in rows))


@register.simple_tag
def queue_rows(queues: list):
    """The rows of a group page's queue table (the snapshot document's wire form of each queue)."""
    cells = _Cells()
    return mark_safe("\n".join(cells.queue(q) for q in queues))
