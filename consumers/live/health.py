"""Health of a consumer group over a wall-clock window of recent polls, with evidence.

Each poll leaves a compact `Sample` per group. `evaluate` looks at the samples inside the
window and returns every condition that holds, each with the numbers that led to it; the
most severe one is the group's state. A group we could not read is UNKNOWN with the reason,
never OK.

States, most severe first: UNKNOWN, OFFSET_EXPIRED, PAUSED, STALLED, STOPPED, RETENTION_RISK,
DLQ_GROWING, RETRY_STORM, REBALANCE_STORM, FALLING_BEHIND, CATCHING_UP, IDLE, OK.

RETENTION_RISK (retention.py, judged beside the drain forecast) is messages not yet lost but
that will be before the group reaches them; OFFSET_EXPIRED is what is already lost.

PAUSED ranks above STALLED and STOPPED: a group whose subscription config says consumeEnable
false on some broker is refused its pulls there, so it stalls by design; the pause is the cause
to show (and the state alert rules for stalled or stopped groups do not fire on it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats

# The evidence sentences, in English: the snapshot documents, the API and the alerts keep them so
# (one document serves every reader); pages show them in the reader's language, parsed back by
# these formats (consumers/languages/evidence.py). Numbers go in already formatted.
NO_POLL_YET = gettext_noop("no poll has read this group yet")
OFFSETS_UNREAD = gettext_noop("the last poll could not read this group's offsets")
PART_UNREAD = gettext_noop("part of the group could not be read in the last poll (see problems)")
EXPIRED = gettext_noop(
    "%(count)s queue(s) have a consumer offset below the broker's min offset (%(queues)s): "
    "messages were lost to retention"
)
STOPPED = gettext_noop("no client is online and lag is %(lag)s")
CONSUMING = gettext_noop("lag %(lag)s, consuming")
STALLED = gettext_noop("clients online but %(queue)s has stayed at offset %(offset)s with lag %(lag)s for %(seconds)ss")
STALLED_MORE = gettext_noop(
    "clients online but %(queue)s has stayed at offset %(offset)s with lag %(lag)s for %(seconds)ss "
    "and %(more)s more queue(s)"
)
DLQ_GROWING = gettext_noop("%(grown)s new dead letter(s) in %(seconds)ss (now %(now)s)")
RETRY_STORM = gettext_noop(
    "%(grown)s messages went back for redelivery in %(seconds)ss (failed, or timed out in flight: a client "
    "that left holding messages sends them back too) (%(rate)s/min, threshold %(threshold)s/min)"
)
REBALANCE_STORM = gettext_noop(
    "the queue allocation changed at %(changes)s polls in %(seconds)ss (threshold %(limit)s): "
    "see the allocation timeline"
)
LAG_GREW = gettext_noop("lag grew from %(start)s to %(end)s over %(seconds)ss")
LAG_FELL = gettext_noop("lag fell from %(start)s to %(end)s over %(seconds)ss")
NO_LAG = gettext_noop("no lag")
IDLE = gettext_noop("no lag and no consumption in %(seconds)ss")
PAUSED = gettext_noop("consumption paused: consumeEnable is false on %(brokers)s, which refuse its pulls")
EVIDENCE_FORMATS = (
    NO_POLL_YET, OFFSETS_UNREAD, PART_UNREAD, EXPIRED, PAUSED, STOPPED, CONSUMING, STALLED, STALLED_MORE,
    DLQ_GROWING, RETRY_STORM, REBALANCE_STORM, LAG_GREW, LAG_FELL, NO_LAG, IDLE,
)  # fmt: skip
register_formats(*EVIDENCE_FORMATS)

SEVERITY = (
    "UNKNOWN",
    "OFFSET_EXPIRED",
    "PAUSED",
    "STALLED",
    "STOPPED",
    "RETENTION_RISK",
    "DLQ_GROWING",
    "RETRY_STORM",
    "REBALANCE_STORM",
    "FALLING_BEHIND",
    "CATCHING_UP",
    "IDLE",
    "OK",
)


@dataclass(frozen=True)
class Thresholds:
    """Defaults are the HEALTH_* settings (see config.default_thresholds)."""

    window_seconds: int  # how far back the evaluation looks
    min_samples: int  # fewer samples in the window: trends are not judged yet
    stall_seconds: int  # a lagging queue whose offset has not moved this long is stalled
    min_lag: int  # lag below this is not "behind"
    retry_rate_per_minute: float  # retry topic growth that counts as a storm
    rebalance_changes: int = 5  # more allocation changes than this in the window: a rebalance storm

    def with_overrides(self, overrides: dict) -> Thresholds:
        if not overrides:
            return self  # most groups: no copy per group and poll
        known = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if k in known and v is not None})


@dataclass(slots=True)
class Sample:
    """One poll of one group, as kept in the window. None means unknown at that poll."""

    t: float
    online: bool | None
    lag: int | None  # subscribed topics, retry excluded
    # lagging queues only (all stall detection needs): queue -> (consumer offset, lag), a list once
    # read back from the window (only unpacked and indexed: converting cost a third of reading it)
    queues: dict[str, tuple[int, int] | list[int]] = field(default_factory=dict)
    consumed: int | None = None  # sum of all consumer offsets: moves whenever anything is consumed
    retry_offset: int | None = None  # sum of the retry queues' max offsets
    dlq: int | None = None  # messages in the DLQ
    expired: list[str] = field(default_factory=list)  # queues whose offset fell below the min offset
    complete: bool = True
    # which client holds which queue, as a CRC-32 (stable across processes); None: unknown
    allocation: int | None = None
    pop: bool = False  # consumes with POP: its retry topic is also written for each dead letter
    paused: list[str] = field(default_factory=list)  # brokers whose config says consumeEnable false

    def to_wire(self) -> list:
        return [
            self.t, self.online, self.lag, self.queues, self.consumed,
            self.retry_offset, self.dlq, self.expired, self.complete, self.allocation, self.pop, self.paused,
        ]  # fmt: skip

    @classmethod
    def from_wire(cls, data: list) -> Sample:
        t, online, lag, queues, consumed, retry_offset, dlq, expired, complete, *rest = data
        return cls(
            t, online, lag, queues, consumed, retry_offset, dlq, expired, complete,
            rest[0] if rest else None,  # samples written before the allocation was kept have none
            bool(rest[1]) if len(rest) > 1 else False,
            list(rest[2]) if len(rest) > 2 and rest[2] else [],
        )  # fmt: skip


@dataclass
class Finding:
    state: str
    evidence: str
    # STALLED: where the group is pinned (topic, broker, queue_id, offset), longest first; the
    # group page links each to the message there and to "Skip this message…"
    pinned: list[dict] = field(default_factory=list)

    def to_wire(self) -> dict:
        wire = {"state": self.state, "evidence": self.evidence}
        if self.pinned:
            wire["pinned"] = self.pinned
        return wire


@dataclass
class Health:
    state: str
    findings: list[Finding]
    window_seconds: float  # how much of the window the samples actually cover

    def adding(self, finding: Finding) -> Health:
        """This health with one more finding: the state is the most severe of them all."""
        findings = [f for f in self.findings if f.state != "OK"] + [finding]
        return Health(min((f.state for f in findings), key=SEVERITY.index), findings, self.window_seconds)

    def to_wire(self) -> dict:
        return {
            "state": self.state,
            "findings": [f.to_wire() for f in self.findings],
            "covered_seconds": round(self.window_seconds, 1),
        }


def evaluate(samples: list[Sample], thresholds: Thresholds, *, unknown_reason: str | None = None) -> Health:
    """Health at the newest sample, judged over the samples inside the window."""
    if not samples:
        return Health("UNKNOWN", [Finding("UNKNOWN", unknown_reason or NO_POLL_YET)], 0.0)
    now = samples[-1].t
    window = [s for s in samples if now - s.t <= thresholds.window_seconds]
    latest = window[-1]
    covered = latest.t - window[0].t
    findings: list[Finding] = []
    if unknown_reason or latest.lag is None:
        findings.append(Finding("UNKNOWN", unknown_reason or OFFSETS_UNREAD))
        return Health("UNKNOWN", findings, covered)
    if not latest.complete:
        findings.append(Finding("UNKNOWN", PART_UNREAD))
    if latest.expired:
        queues = ", ".join(latest.expired[:4])
        findings.append(Finding("OFFSET_EXPIRED", EXPIRED % {"count": len(latest.expired), "queues": queues}))
    if latest.paused:
        findings.append(Finding("PAUSED", PAUSED % {"brokers": ", ".join(latest.paused)}))
    findings += _stalled(window, thresholds)
    if latest.online is False and latest.lag >= thresholds.min_lag:
        findings.append(Finding("STOPPED", STOPPED % {"lag": latest.lag}))
    findings += _growth(window, thresholds)
    findings += _rebalances(window, thresholds)
    findings += _trend(window, thresholds, covered)
    if not findings:
        findings.append(Finding("OK", CONSUMING % {"lag": latest.lag}))
    state = min((f.state for f in findings), key=SEVERITY.index)
    return Health(state, findings, covered)


def _stalled(window: list[Sample], thresholds: Thresholds) -> list[Finding]:
    latest = window[-1]
    if not latest.online:
        return []
    pinned = []
    for queue, (offset, lag) in latest.queues.items():
        if lag < thresholds.min_lag:
            continue
        # the earliest sample from which this queue's offset has not moved with clients online: a
        # stall is clients that do not consume, so polls that did not know of a client (a proxy
        # restarting, its gRPC clients registering again) do not count towards it
        since = latest.t
        for sample in reversed(window[:-1]):
            earlier = sample.queues.get(queue)
            if earlier is None or earlier[0] != offset or earlier[1] < thresholds.min_lag or sample.online is not True:
                break
            since = sample.t
        if latest.t - since >= thresholds.stall_seconds:
            pinned.append((queue, offset, lag, latest.t - since))
    if not pinned:
        return []
    pinned.sort(key=lambda p: -p[3])
    queue, offset, lag, seconds = pinned[0]
    params = {"queue": queue, "offset": offset, "lag": lag, "seconds": f"{seconds:.0f}", "more": len(pinned) - 1}
    where = [
        dict(position, offset=at)
        for label, at, _lag, _seconds in pinned[:MAX_PINNED_SHOWN]
        if (position := _position(label)) is not None
    ]
    return [Finding("STALLED", (STALLED_MORE if len(pinned) > 1 else STALLED) % params, where)]


MAX_PINNED_SHOWN = 5


def _position(label: str) -> dict | None:
    """topic@broker#queue as its parts (topic names hold neither @ nor #); None: not a label."""
    rest, _hash, queue_id = label.rpartition("#")
    topic, _at, broker = rest.partition("@")
    if not (topic and broker and queue_id.isascii() and queue_id.isdigit()):
        return None
    return {"topic": topic, "broker": broker, "queue_id": int(queue_id)}


def _growth(window: list[Sample], thresholds: Thresholds) -> list[Finding]:
    findings = []
    latest = window[-1]
    dlq_points = [s for s in window if s.dlq is not None]
    if len(dlq_points) >= 2 and dlq_points[-1].dlq > dlq_points[0].dlq:
        grown = dlq_points[-1].dlq - dlq_points[0].dlq
        seconds = dlq_points[-1].t - dlq_points[0].t
        params = {"grown": grown, "seconds": f"{seconds:.0f}", "now": latest.dlq}
        findings.append(Finding("DLQ_GROWING", DLQ_GROWING % params))
    retry_points = [s for s in window if s.retry_offset is not None and (not s.pop or s.dlq is not None)]
    if len(retry_points) >= 2:
        grown = _redelivered(retry_points)
        minutes = (retry_points[-1].t - retry_points[0].t) / 60
        if minutes > 0 and grown / minutes >= thresholds.retry_rate_per_minute:
            params = {
                "grown": grown,
                "seconds": f"{minutes * 60:.0f}",
                "rate": f"{grown / minutes:.0f}",
                "threshold": f"{thresholds.retry_rate_per_minute:.0f}",
            }
            findings.append(Finding("RETRY_STORM", RETRY_STORM % params))
    return findings


def _redelivered(points: list[Sample]) -> int:
    """Redeliveries between the first and last point: the retry topics' growth.

    POP groups (measured on 5.3.3 with the 5.x SDK, max attempts 3): after every failed
    delivery the invisible time runs out and the broker's revive writes the message to the POP
    retry topic, after the last delivery too; only when that last copy is popped is it found
    past max attempts and forwarded to the DLQ instead of delivered. So their retry topic is
    written once more per dead letter than messages are redelivered: the DLQ's arrivals (its
    rises between polls; a fall is retention or a cleanup, not a negative arrival) come off."""
    grown = points[-1].retry_offset - points[0].retry_offset
    if points[-1].pop:
        grown -= sum(max(0, b.dlq - a.dlq) for a, b in zip(points, points[1:], strict=False))
    return max(0, grown)


def _rebalances(window: list[Sample], thresholds: Thresholds) -> list[Finding]:
    """Count the polls at which the queue allocation differed from the poll before (both
    known). Several changes between two polls count once: this is a lower bound."""
    known = [s for s in window if s.allocation is not None]
    changes = sum(1 for a, b in zip(known, known[1:], strict=False) if a.allocation != b.allocation)
    if changes <= thresholds.rebalance_changes:
        return []
    seconds, limit = known[-1].t - known[0].t, thresholds.rebalance_changes
    params = {"changes": changes, "seconds": f"{seconds:.0f}", "limit": limit}
    return [Finding("REBALANCE_STORM", REBALANCE_STORM % params)]


def _trend(window: list[Sample], thresholds: Thresholds, covered: float) -> list[Finding]:
    latest = window[-1]
    known = [s for s in window if s.lag is not None]
    moved = _offsets_moved(known)
    if len(known) < thresholds.min_samples:
        if latest.lag < thresholds.min_lag and not moved:
            return [Finding("IDLE", NO_LAG)]
        return []
    start, end = known[0].lag, known[-1].lag
    steps = [b.lag - a.lag for a, b in zip(known, known[1:], strict=False)]
    if end >= thresholds.min_lag and end > start and sum(1 for d in steps if d > 0) >= 0.75 * len(steps):
        return [Finding("FALLING_BEHIND", LAG_GREW % {"start": start, "end": end, "seconds": f"{covered:.0f}"})]
    if start >= thresholds.min_lag and end < start and end >= thresholds.min_lag:
        return [Finding("CATCHING_UP", LAG_FELL % {"start": start, "end": end, "seconds": f"{covered:.0f}"})]
    if end < thresholds.min_lag and not moved:
        return [Finding("IDLE", IDLE % {"seconds": f"{covered:.0f}"})]
    return []


def _offsets_moved(samples: list[Sample]) -> bool:
    consumed = [s.consumed for s in samples if s.consumed is not None]
    return len(consumed) >= 2 and consumed[-1] != consumed[0]
