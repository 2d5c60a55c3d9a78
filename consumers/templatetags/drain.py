"""The drain forecast (consumers/live/forecast.py) in words: the group's figure with its band,
the trend, and why it is unknown, in the reader's language."""

from __future__ import annotations

from django import template
from django.utils.formats import number_format
from django.utils.translation import gettext, pgettext

from ..languages.evidence import translate_evidence
from ..live.forecast import DRAINED, DRAINING, NOT_DRAINING
from .console import age

register = template.Library()


@register.filter
def drain_text(drain: dict | None) -> str:
    """ "in about 12 min (9 min – 16 min)", "not at this rate", "no lag", or "unknown: why"."""
    if not drain:
        return gettext("unknown: no poll has made a forecast yet")
    # a queue's row (drain_queues) has no state of its own: a figure, or none and why
    state = drain.get("state") or (DRAINING if drain.get("seconds") is not None else None)
    if drain.get("caught_up"):
        return gettext("caught up: the lag left is in flight, and keeps pace")
    if state == DRAINED:
        return gettext("no lag")
    if state == NOT_DRAINING:
        return gettext("not at this rate")
    if state == DRAINING:
        values = {"time": age(drain["seconds"]), "low": age(drain.get("low"))}
        if drain.get("high") is None:
            return gettext("in about %(time)s (from %(low)s; at the slow end of the band, never)") % values
        return gettext("in about %(time)s (%(low)s – %(high)s)") % {**values, "high": age(drain["high"])}
    return gettext("unknown: %(reason)s") % {"reason": translate_evidence(drain.get("reason") or "")}


@register.filter
def drain_short(drain: dict | None) -> str:
    """The groups list's cell: the figure alone."""
    state = (drain or {}).get("state")
    if state == DRAINED:
        return "0"
    if state == DRAINING:
        return age(drain["seconds"])
    if state == NOT_DRAINING:
        return pgettext("drain forecast", "never")
    return "—"


@register.filter
def drain_trend(trend: str | None) -> str:
    words = {
        "growing": pgettext("lag trend", "growing"),
        "steady": pgettext("lag trend", "steady"),
        "shrinking": pgettext("lag trend", "shrinking"),
    }
    return words.get(trend, gettext("not known yet"))


@register.filter
def per_second(rate) -> str:
    return "—" if rate is None else gettext("%(n)s/s") % {"n": f"{rate:,.1f}"}


@register.filter
def drain_reason(reason: str | None) -> str:
    return translate_evidence(reason or "")


@register.filter
def retention_short(retention: dict | None) -> str:
    """The group page's figure for its retention risk (consumers/live/retention.py)."""
    state = (retention or {}).get("state")
    if state == "AT_RISK":
        lost = sum(q["lost"] for q in retention["queues"])
        first = min(q["in_seconds"] for q in retention["queues"])
        return gettext("about %(count)s lost in %(time)s") % {"count": number_format(lost, force_grouping=True),
                                                               "time": age(first)}  # fmt: skip
    if state == "SAFE":
        return gettext("safe for %(hours)s h") % {"hours": f"{retention['horizon_hours']:g}"}
    return gettext("unknown")


@register.filter
def retention_text(retention: dict | None) -> str:
    """Its tooltip: each queue at risk, or why it is unknown."""
    if not retention:
        return gettext("no lag: nothing to lose")
    if retention.get("state") == "AT_RISK":
        each = gettext("%(queue)s: about %(count)s in %(time)s")
        return "; ".join(
            each % {"queue": q["queue"], "count": number_format(q["lost"], force_grouping=True),
                    "time": age(q["in_seconds"])}
            for q in retention["queues"]
        )  # fmt: skip
    return translate_evidence(retention.get("reason") or "")
