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

from ..live.documents import ClusterMeta, GroupDocument
from ..live.health import Sample

GROUP, BROKER, CLUSTER = "group", "broker", "cluster"
# the shortest stretch of polls a dead-letter rate is computed over
MIN_RATE_SPAN_SECONDS = 60.0


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
) -> Judgement:
    if spec.scope == CLUSTER:
        return _cluster(meta)
    if documents is None:  # the poll failed: brokers and groups are unknown, not gone
        return Judgement(all_unknown=f"the poll failed: {meta.error}")
    if spec.scope == BROKER:
        return _brokers(meta)
    verdict = Judgement()
    check = _GROUP_CHECKS[spec.condition]
    for group, doc in _in_scope(spec, documents):
        if doc.stale:
            verdict.unknown.add(group)
            continue
        seen = check(spec, doc, (window or {}).get(group))
        if seen is None:
            verdict.unknown.add(group)
        elif seen is not False:
            verdict.holds[group] = seen
    return verdict


def clear_evidence(spec: Spec, subject: str, meta: ClusterMeta, documents: dict[str, GroupDocument] | None) -> str:
    """Why an open alert ends: said only for the few alerts that do, not for every subject."""
    if spec.scope == CLUSTER:
        return f"the cluster's last poll is {meta.status}"
    if spec.scope == BROKER:
        broker = next((b for b in meta.brokers if b.name == subject), None)
        return f"broker {subject} is {broker.state}" if broker else f"broker {subject} is no longer known"
    match = spec.matcher()
    if match is not None and not match(subject):
        return f"group {subject} no longer matches the rule's groups ({spec.group_pattern})"
    doc = (documents or {}).get(subject)
    if doc is None:
        return f"group {subject} is no longer listed by the cluster"
    health = doc.health or {}
    if spec.condition == "state":
        first = (health.get("findings") or [{}])[0].get("evidence", "")
        return f"health is {health.get('state')}: {first}".rstrip(": ")
    if spec.condition == "lag_seconds":
        if doc.lag_seconds is None:
            return f"lag in seconds is not measured now (threshold {spec.threshold:g} s)"
        return f"lag is {doc.lag_seconds:.0f} s (threshold {spec.threshold:g} s)"
    return f"dead letters arrive at or under {spec.threshold:g} per hour"


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
        return Observation(f"lag is {doc.lag_seconds:.0f} s, above {spec.threshold:g} s (lag {doc.lag} messages)")
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
        return Observation(f"{arrivals} dead letters in the last {span:.0f} s: {rate:.0f} per hour, "
                           f"above {spec.threshold:g}")  # fmt: skip
    return False


_GROUP_CHECKS = {"state": _state, "lag_seconds": _lag_seconds, "dlq_rate": _dlq_rate}


def _cluster(meta: ClusterMeta) -> Judgement:
    if meta.status in ("degraded", "failed"):
        why = meta.error or "; ".join(f"{p['target']}: {p['error']}" for p in meta.problems[:3])
        parts = [f"the cluster's last poll is {meta.status}"]
        if why:
            parts.append(why)
        if meta.groups_incomplete:
            parts.append(f"{meta.groups_incomplete} group(s) incomplete")
        return Judgement(holds={"": Observation(": ".join(parts[:2]) + "; ".join([""] + parts[2:]))})
    return Judgement()


def _brokers(meta: ClusterMeta) -> Judgement:
    verdict = Judgement()
    for broker in meta.brokers:
        if broker.state in ("missing", "failing"):
            verdict.holds[broker.name] = Observation(
                f"broker {broker.name} ({broker.address}) is {broker.state}"
                + (f": {broker.error}" if broker.error else "")
            )
        elif broker.state == "unknown":
            verdict.unknown.add(broker.name)
    return verdict
