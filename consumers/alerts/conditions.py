"""Which subjects a rule's condition holds for at one poll: pure, no database.

Three answers per subject, because unknown is not "fine": `holds` (with the evidence),
`unknown` (this poll could not tell: an open alert stays as it is, neither fired nor
resolved) and everything else, which is known not to hold. A failed poll knows nothing of
groups or brokers: `all_unknown` says so.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats
from ..live.documents import ClusterMeta, GroupDocument
from ..live.forecast import DRAINED, DRAINING, NOT_DRAINING
from ..live.health import Sample

GROUP, BROKER, CLUSTER = "group", "broker", "cluster"
# the shortest stretch of polls a dead-letter rate is computed over
MIN_RATE_SPAN_SECONDS = 60.0

# Evidence is kept in English (the alert, the webhook's JSON, the API); a notification in another
# language shows it translated (channels.evidence_text, languages/evidence.py), matched against
# these formats: the first that matches, so the more particular of two alike comes first.
POLL_FAILED = gettext_noop("the poll failed: %(error)s")
CLUSTER_POLL_WHY = gettext_noop("the cluster's last poll is %(status)s: %(why)s")
CLUSTER_POLL = gettext_noop("the cluster's last poll is %(status)s")
GROUPS_INCOMPLETE = gettext_noop("%(count)s group(s) incomplete")
BROKER_GONE = gettext_noop("broker %(broker)s is no longer known")
BROKER_AT_ERROR = gettext_noop("broker %(broker)s (%(address)s) is %(state)s: %(error)s")
BROKER_AT = gettext_noop("broker %(broker)s (%(address)s) is %(state)s")
BROKER_IS = gettext_noop("broker %(broker)s is %(state)s")
NO_LONGER_MATCHES = gettext_noop("group %(group)s no longer matches the rule's groups (%(pattern)s)")
NO_LONGER_LISTED = gettext_noop("group %(group)s is no longer listed by the cluster")
HEALTH_WITH = gettext_noop("health is %(state)s: %(finding)s")
HEALTH_IS = gettext_noop("health is %(state)s")
LAG_UNMEASURED = gettext_noop("lag in seconds is not measured now (threshold %(threshold)s s)")
LAG_UNDER = gettext_noop("lag is %(seconds)s s (threshold %(threshold)s s)")
LAG_ABOVE = gettext_noop("lag is %(seconds)s s, above %(threshold)s s (lag %(lag)s messages)")
DLQ_UNDER = gettext_noop("dead letters arrive at or under %(threshold)s per hour")
DLQ_ABOVE = gettext_noop("%(arrivals)s dead letters in the last %(span)s s: %(rate)s per hour, above %(threshold)s")
DRAIN_ABOVE = gettext_noop("drains in about %(seconds)s s, above %(threshold)s s (slowest: %(queue)s)")
DRAIN_NEVER = gettext_noop("lag %(lag)s does not shrink at the current rates (%(queue)s)")
DRAIN_UNDER = gettext_noop("drains in about %(seconds)s s (threshold %(threshold)s s)")
DRAIN_DONE = gettext_noop("the lag is consumed")
DRAIN_UNKNOWN = gettext_noop("the drain forecast is unknown now: %(reason)s")
IDLE_SINCE = gettext_noop("no client online for %(days)s days (threshold %(threshold)s days)")
IDLE_NEVER = gettext_noop(
    "no client seen online in the %(days)s days the console has watched (threshold %(threshold)s days)"
)
IDLE_ENDED = gettext_noop("a client of the group is online again")
IDLE_UNDER = gettext_noop("idle for less than the threshold of %(threshold)s days")
EVIDENCE_FORMATS = (
    DRAIN_ABOVE, DRAIN_NEVER, DRAIN_UNDER, DRAIN_DONE, DRAIN_UNKNOWN,
    POLL_FAILED, CLUSTER_POLL_WHY, CLUSTER_POLL, GROUPS_INCOMPLETE, BROKER_GONE, BROKER_AT_ERROR, BROKER_AT,
    BROKER_IS, NO_LONGER_MATCHES, NO_LONGER_LISTED, HEALTH_WITH, HEALTH_IS, LAG_UNMEASURED, LAG_UNDER, LAG_ABOVE,
    DLQ_UNDER, DLQ_ABOVE, IDLE_SINCE, IDLE_NEVER, IDLE_ENDED, IDLE_UNDER,
)  # fmt: skip
register_formats(*EVIDENCE_FORMATS)


@dataclass(frozen=True)
class Spec:
    """What evaluation needs of an AlertRule, read once per poll."""

    condition: str
    states: frozenset[str] = frozenset()
    threshold: float | None = None
    group_pattern: str = "*"

    @property
    def scope(self) -> str:
        return {"cluster_degraded": CLUSTER, "broker_missing": BROKER}.get(self.condition, GROUP)

    def matcher(self):
        if self.group_pattern in ("", "*"):
            return None
        return re.compile(fnmatch.translate(self.group_pattern)).match


@dataclass(frozen=True)
class Observation:
    evidence: str
    findings: tuple = ()


@dataclass
class Judgement:
    holds: dict[str, Observation] = field(default_factory=dict)  # subject -> why
    unknown: set[str] = field(default_factory=set)
    all_unknown: str | None = None  # why nothing could be told (a failed poll)


def judge(
    spec: Spec,
    meta: ClusterMeta,
    documents: dict[str, GroupDocument] | None,
    window: dict[str, list[Sample]] | None = None,
    idle: dict[str, Idle] | None = None,
) -> Judgement:
    """`window`: each group's recent samples (rates); `idle`: how long each group has had no
    client online (the abandoned condition), from the polls' record (consumers/lifecycle/seen.py)."""
    if spec.scope == CLUSTER:
        return _cluster(meta)
    if documents is None:  # the poll failed: brokers and groups are unknown, not gone
        return Judgement(all_unknown=POLL_FAILED % {"error": meta.error})
    if spec.scope == BROKER:
        return _brokers(meta)
    verdict = Judgement()
    check = _GROUP_CHECKS[spec.condition]
    inputs = (idle if spec.condition == "abandoned" else window) or {}
    for group, doc in _in_scope(spec, documents):
        if doc.stale:
            verdict.unknown.add(group)
            continue
        seen = check(spec, doc, inputs.get(group))
        if seen is None:
            verdict.unknown.add(group)
        elif seen is not False:
            verdict.holds[group] = seen
    return verdict


def clear_evidence(spec: Spec, subject: str, meta: ClusterMeta, documents: dict[str, GroupDocument] | None) -> str:
    """Why an open alert ends: said only for the few alerts that do, not for every subject."""
    if spec.scope == CLUSTER:
        return CLUSTER_POLL % {"status": meta.status}
    if spec.scope == BROKER:
        broker = next((b for b in meta.brokers if b.name == subject), None)
        return BROKER_IS % {"broker": subject, "state": broker.state} if broker else BROKER_GONE % {"broker": subject}
    match = spec.matcher()
    if match is not None and not match(subject):
        return NO_LONGER_MATCHES % {"group": subject, "pattern": spec.group_pattern}
    doc = (documents or {}).get(subject)
    if doc is None:
        return NO_LONGER_LISTED % {"group": subject}
    health = doc.health or {}
    if spec.condition == "state":
        first = (health.get("findings") or [{}])[0].get("evidence", "")
        state = health.get("state")
        return HEALTH_WITH % {"state": state, "finding": first} if first else HEALTH_IS % {"state": state}
    if spec.condition == "lag_seconds":
        if doc.lag_seconds is None:
            return LAG_UNMEASURED % {"threshold": f"{spec.threshold:g}"}
        return LAG_UNDER % {"seconds": f"{doc.lag_seconds:.0f}", "threshold": f"{spec.threshold:g}"}
    if spec.condition in ("drain_seconds", "not_draining"):
        return _drain_clear(spec, doc.drain or {})
    if spec.condition == "abandoned":
        return IDLE_ENDED if doc.online else IDLE_UNDER % {"threshold": f"{spec.threshold:g}"}
    return DLQ_UNDER % {"threshold": f"{spec.threshold:g}"}


def _drain_clear(spec: Spec, drain: dict) -> str:
    if drain.get("state") == DRAINED:
        return DRAIN_DONE
    if drain.get("state") == DRAINING:
        threshold = f"{spec.threshold:g}" if spec.threshold is not None else "-"
        return DRAIN_UNDER % {"seconds": f"{drain['seconds']:.0f}", "threshold": threshold}
    return DRAIN_UNKNOWN % {"reason": drain.get("reason") or drain.get("state")}


def _in_scope(spec: Spec, documents: dict[str, GroupDocument]) -> Iterable[tuple[str, GroupDocument]]:
    match = spec.matcher()
    items = documents.items()
    return items if match is None else ((g, d) for g, d in items if match(g))


def _state(spec: Spec, doc: GroupDocument, samples) -> Observation | bool | None:
    health = doc.health or {}
    findings = health.get("findings") or []
    hit = [f for f in findings if f.get("state") in spec.states]
    if hit:
        return Observation("; ".join(f"{f['state']}: {f['evidence']}" for f in hit), tuple(findings))
    # an UNKNOWN group may be in any state: unless UNKNOWN is what the rule asks for, hold
    return None if health.get("state") in (None, "UNKNOWN") else False


def _lag_seconds(spec: Spec, doc: GroupDocument, samples) -> Observation | bool | None:
    if doc.lag_seconds is None:
        return None
    if doc.lag_seconds > spec.threshold:
        values = {"seconds": f"{doc.lag_seconds:.0f}", "threshold": f"{spec.threshold:g}", "lag": doc.lag}
        return Observation(LAG_ABOVE % values)
    return False


def _dlq_rate(spec: Spec, doc: GroupDocument, samples: list[Sample] | None) -> Observation | bool | None:
    points = [(s.t, s.dlq) for s in samples or [] if s.dlq is not None]
    if len(points) < 2 or points[-1][0] - points[0][0] < MIN_RATE_SPAN_SECONDS:
        return None
    span = points[-1][0] - points[0][0]
    # only increases count: a redrive or a purge lowers the count without undoing arrivals
    arrivals = sum(max(0, b[1] - a[1]) for a, b in zip(points, points[1:], strict=False))
    rate = arrivals / span * 3600
    if rate > spec.threshold:
        values = {"arrivals": arrivals, "span": f"{span:.0f}", "rate": f"{rate:.0f}"}
        values["threshold"] = f"{spec.threshold:g}"
        return Observation(DLQ_ABOVE % values)
    return False


def _drain(spec: Spec, doc: GroupDocument, samples) -> Observation | bool | None:
    """drain_seconds: the forecast is above the threshold, or there is none because the lag does
    not shrink; not_draining: only the latter. Unknown while the forecast is (too few polls)."""
    drain = doc.drain or {}
    state = drain.get("state")
    if state == NOT_DRAINING:
        return Observation(DRAIN_NEVER % {"lag": doc.lag, "queue": drain.get("queue")})
    if state == DRAINING and spec.condition == "drain_seconds" and drain["seconds"] > spec.threshold:
        values = {"seconds": f"{drain['seconds']:.0f}", "threshold": f"{spec.threshold:g}", "queue": drain.get("queue")}
        return Observation(DRAIN_ABOVE % values)
    return False if state in (DRAINED, DRAINING) else None


@dataclass(frozen=True)
class Idle:
    seconds: float  # since a client was last seen online, or since the console began watching
    seen: bool  # False: never seen online while watched


def _abandoned(spec: Spec, doc: GroupDocument, idle: Idle | None) -> Observation | bool | None:
    if doc.online is None or (doc.online is False and idle is None):
        return None  # online or not is unknown, or nothing was recorded yet
    if doc.online or idle.seconds < spec.threshold * DAY:
        return False
    values = {"days": f"{idle.seconds / DAY:.1f}", "threshold": f"{spec.threshold:g}"}
    return Observation((IDLE_SINCE if idle.seen else IDLE_NEVER) % values)


DAY = 86400.0
_GROUP_CHECKS = {
    "state": _state, "lag_seconds": _lag_seconds, "dlq_rate": _dlq_rate,
    "drain_seconds": _drain, "not_draining": _drain, "abandoned": _abandoned,
}  # fmt: skip


def _cluster(meta: ClusterMeta) -> Judgement:
    if meta.status in ("degraded", "failed"):
        why = meta.error or "; ".join(f"{p['target']}: {p['error']}" for p in meta.problems[:3])
        parts = [CLUSTER_POLL % {"status": meta.status}]
        if why:
            parts.append(why)
        if meta.groups_incomplete:
            parts.append(GROUPS_INCOMPLETE % {"count": meta.groups_incomplete})
        return Judgement(holds={"": Observation(": ".join(parts[:2]) + "; ".join([""] + parts[2:]))})
    return Judgement()


def _brokers(meta: ClusterMeta) -> Judgement:
    verdict = Judgement()
    for broker in meta.brokers:
        if broker.state in ("missing", "failing"):
            values = {"broker": broker.name, "address": broker.address, "state": broker.state, "error": broker.error}
            verdict.holds[broker.name] = Observation((BROKER_AT_ERROR if broker.error else BROKER_AT) % values)
        elif broker.state == "unknown":
            verdict.unknown.add(broker.name)
    return verdict
