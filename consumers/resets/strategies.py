"""Reset strategies: from each queue's state (min, max, committed offset) and the strategy's
parameters to a target offset per queue. Pure functions, no broker, no Django: the preview
reads the broker, these decide.

Strategies:
    time      the first message stored at or after a moment (found by the broker per queue)
    earliest  the min offset: replay everything still stored
    latest    the max offset: skip the backlog (resolved again when it runs, see `execute`)
    exact     given offsets per queue
    shift     the committed offset moved by N (negative: replay N, positive: skip N)
    copy      another group's committed offsets
Every target is clamped to [min, max]; a queue never committed cannot be shifted.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..web.apischema import JAVA_LONG_MAX
from ..web.inputs import moment_problem, range_problem

# The one range of each number a reset takes, for the API (kind.API_PARAMS), the form
# (forms.ResetForm) and validate_params alike: offsets are Java longs on the broker, and a shift
# is symmetric (-N replays what N skips; -2^63 has no positive twin)
SHIFT_RANGE = (-JAVA_LONG_MAX, JAVA_LONG_MAX)
OFFSET_RANGE = (0, JAVA_LONG_MAX)

# in English (the API lists them so); the reset form shows them translated
STRATEGIES = {
    "time": gettext_noop("to a point in time"),
    "earliest": gettext_noop("earliest (replay everything stored)"),
    "latest": gettext_noop("latest (skip the backlog)"),
    "exact": gettext_noop("exact offsets per queue"),
    "shift": gettext_noop("shift by N messages"),
    "copy": gettext_noop("copy another group's offsets"),
}


class InvalidReset(ValueError):
    """Parameters that cannot make a reset; the message says what to fix."""


@dataclass(frozen=True)
class QueueState:
    topic: str
    broker: str
    queue_id: int
    min: int
    max: int
    current: int | None  # committed offset; None: never committed

    @property
    def label(self) -> str:
        return f"{self.topic}@{self.broker}#{self.queue_id}"


@dataclass(frozen=True)
class Target:
    queue: QueueState
    target: int | None  # None: this queue is left alone (`note` says why)
    clamped: bool = False
    note: str | None = None

    @property
    def delta(self) -> int | None:
        """Messages re-consumed (negative move) or skipped (positive move)."""
        if self.target is None or self.queue.current is None:
            return None
        return self.target - self.queue.current

    def to_wire(self) -> dict:
        q = self.queue
        return {
            "topic": q.topic,
            "broker": q.broker,
            "queue_id": q.queue_id,
            "label": q.label,
            "min": q.min,
            "max": q.max,
            "current": q.current,
            "target": self.target,
            "clamped": self.clamped,
            "never_committed": q.current is None,
            "note": self.note,
            "delta": self.delta,
        }


def validate_params(params: dict, *, now_ms: int) -> dict:
    """Check the parameters that need no broker; return them normalised."""
    strategy = params.get("strategy")
    if strategy not in STRATEGIES:
        raise InvalidReset(
            _("unknown strategy %(strategy)r; one of: %(strategies)s")
            % {"strategy": strategy, "strategies": ", ".join(STRATEGIES)}
        )
    clean: dict = {"strategy": strategy, "include_retry": bool(params.get("include_retry"))}
    topics = params.get("topics") or []
    if not isinstance(topics, list) or not all(isinstance(t, str) and t.strip() for t in topics):
        raise InvalidReset(_("topics must be a list of topic names (empty: every subscribed topic)"))
    clean["topics"] = sorted({t.strip() for t in topics})
    if strategy == "time":
        timestamp = params.get("timestamp_ms")
        if not isinstance(timestamp, int) or isinstance(timestamp, bool) or timestamp < 0:
            raise InvalidReset(_("a time reset needs timestamp_ms, milliseconds since the epoch"))
        problem = moment_problem(timestamp, now_ms=now_ms, past_only=True)
        if problem:
            raise InvalidReset(_("the time %(problem)s") % {"problem": problem})
        clean["timestamp_ms"] = timestamp
    elif strategy == "exact":
        offsets = params.get("offsets")
        if not isinstance(offsets, dict) or not offsets:
            raise InvalidReset(_("an exact reset needs offsets: {topic@broker#queue: offset, ...}"))
        for label, offset in offsets.items():
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise InvalidReset(
                    _("offset for %(queue)s must be a whole number >= 0, not %(offset)r")
                    % {"queue": label, "offset": offset}
                )
            problem = range_problem(offset, *OFFSET_RANGE)
            if problem:
                raise InvalidReset(_("offset for %(queue)s %(problem)s") % {"queue": label, "problem": problem})
        clean["offsets"] = dict(sorted(offsets.items()))
    elif strategy == "shift":
        shift = params.get("shift")
        if not isinstance(shift, int) or isinstance(shift, bool) or shift == 0:
            raise InvalidReset(_("a shift needs a non-zero whole number: negative replays, positive skips"))
        problem = range_problem(shift, *SHIFT_RANGE)
        if problem:
            raise InvalidReset(_("the shift %(problem)s") % {"problem": problem})
        clean["shift"] = shift
    elif strategy == "copy":
        source = (params.get("source_group") or "").strip()
        if not source:
            raise InvalidReset(_("a copy needs the group to copy offsets from"))
        clean["source_group"] = source
    return clean


def compute_targets(
    queues: list[QueueState],
    params: dict,
    *,
    found_by_time: dict[str, int] | None = None,
    source_offsets: dict[str, int | None] | None = None,
) -> list[Target]:
    """A target per queue; refuses (InvalidReset) exact offsets outside the queues or past max."""
    strategy = params["strategy"]
    if strategy == "exact":
        known = {q.label: q for q in queues}
        for label, offset in params["offsets"].items():
            if label not in known:
                example = next(iter(known), "-")
                raise InvalidReset(
                    _("%(queue)s is not a queue of this reset (queues look like %(example)s)")
                    % {"queue": label, "example": example}
                )
            if offset > known[label].max:
                raise InvalidReset(
                    _("offset %(offset)s for %(queue)s is beyond its max offset %(max)s")
                    % {"offset": offset, "queue": label, "max": known[label].max}
                )
    return [_target(q, strategy, params, found_by_time or {}, source_offsets or {}) for q in queues]


def _target(q: QueueState, strategy: str, params: dict, found: dict[str, int], source: dict) -> Target:
    if strategy == "earliest":
        wanted = q.min
    elif strategy == "latest":
        wanted = q.max
    elif strategy == "time":
        wanted = found[q.label]
    elif strategy == "exact":
        if q.label not in params["offsets"]:
            return Target(q, None, note=_("not in the requested offsets: left alone"))
        wanted = params["offsets"][q.label]
    elif strategy == "shift":
        if q.current is None:
            return Target(q, None, note=_("never committed: nothing to shift from"))
        wanted = q.current + params["shift"]
    else:  # copy
        wanted = source.get(q.label)
        if wanted is None:
            return Target(
                q,
                None,
                note=_("%(group)s has no committed offset here: left alone") % {"group": params["source_group"]},
            )
    clamped = min(max(wanted, q.min), q.max)
    return Target(q, clamped, clamped=clamped != wanted)


def totals(targets: list[Target]) -> dict[str, dict[str, int]]:
    """Per topic: messages that will be consumed again, and messages that will be skipped."""
    result: dict[str, dict[str, int]] = {}
    for t in targets:
        entry = result.setdefault(t.queue.topic, {"reconsumed": 0, "skipped": 0, "queues": 0})
        entry["queues"] += 1
        if t.delta is not None and t.delta < 0:
            entry["reconsumed"] += -t.delta
        elif t.delta is not None and t.delta > 0:
            entry["skipped"] += t.delta
    return result
