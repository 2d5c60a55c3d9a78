"""/metrics in the Prometheus text format, from what the last polls stored (never a broker call
per scrape): per group and per topic, per cluster and broker, and the console's jobs.

Unknown values are absent, never 0: a scrape without a group's lag has no lag series for it, and
`rocketmq_console_group_data_age_seconds` says how old what is there is. States are state sets:
one series per possible state, 1 for the current one, so a rule can match `== 1` on a state and
Grafana can colour a timeline. Names and labels are documented in docs/operations.md (Metrics)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from ..live.forecast import NEVER
from ..live.forecast import sort_value as drain_sort_value
from ..live.health import SEVERITY
from ..live.selectors import ClusterState, GroupRow

PREFIX = "rocketmq_console"
CLUSTER_STATES = ("ok", "degraded", "failed", "stale", "awaiting poll", "never polled")
BROKER_STATES = ("ok", "failing", "missing", "unknown")


def _gauge(name: str, documentation: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=list(labels))


def _state_set(family: GaugeMetricFamily, labels: list[str], states: Iterable[str], current: str) -> None:
    for state in states:
        family.add_metric([*labels, state], 1.0 if state == current else 0.0)


class _Lines:
    """One gauge family written the way prometheus_client's generate_latest writes it (HELP,
    TYPE, one line per sample, labels sorted by name, values by its floatToGoString), for the
    families with a series per group: at 10,000 groups that is 200,000 series, and the
    library's per-sample label checks took 1.1 s of a 1.5 s scrape. tests/metrics proves the
    bytes equal generate_latest's on the same samples."""

    def __init__(self, name: str, documentation: str):
        self.name = f"{PREFIX}_{name}"
        help_text = documentation.replace("\\", r"\\").replace("\n", r"\n")
        self.lines = [f"# HELP {self.name} {help_text}\n# TYPE {self.name} gauge\n"]

    def add(self, labels: str, value: float) -> None:
        """`labels`: the label pairs, escaped and sorted by name (_pairs)."""
        self.lines.append(f"{self.name}{{{labels}}} {_number(value)}\n")

    def text(self) -> str:
        return "".join(self.lines)


def _pairs(**labels: str) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


_ONE, _ZERO = floatToGoString(1.0), floatToGoString(0.0)


def _number(value: float) -> str:
    return _ONE if value == 1.0 else _ZERO if value == 0.0 else floatToGoString(value)


def group_text(rows: list[GroupRow], *, per_queue: dict | None = None) -> str:
    """Per group: lag (and for its tags), lag seconds, retry lag, DLQ size, consume TPS, clients,
    in flight, data age, staleness, health, the drain forecast and the messages retention will
    take; per group and topic: lag and lag seconds; per queue (only when `per_queue` maps
    (cluster, group) to the queue rows): lag. In the text format."""
    values = {
        "lag": _Lines("group_lag_messages", "Messages not yet consumed (retry topics apart)"),
        "lag_seconds": _Lines("group_lag_seconds", "Age of the oldest unconsumed message, worst queue"),
        "retry_lag": _Lines("group_retry_lag_messages", "Messages waiting in the group's %RETRY% topic"),
        "dlq_count": _Lines("group_dlq_messages", "Messages in the group's dead-letter queue"),
        "consume_tps": _Lines("group_consume_tps", "Messages consumed per second, as the brokers report"),
        "clients": _Lines("group_clients", "Clients of the group online"),
        "in_flight": _Lines("group_in_flight_messages", "POP messages taken and not yet acked"),
        "tag_lag": _Lines("group_tag_lag_messages", "Of the lag, the messages the group's tags take (tag filters)"),
    }
    age = _Lines("group_data_age_seconds", "Age of the group's last read")
    stale = _Lines("group_stale", "1 when the group's data is older than its cluster's staleness bound")
    health = _Lines("group_health", "The group's health state (one series per state)")
    drain = _Lines("group_drain_seconds", "Forecast seconds until the group's lag is consumed (+Inf: not at this rate)")
    retention = _Lines(
        "group_retention_loss_messages",
        "Messages the brokers' retention will delete before the group reads them, within the horizon",
    )
    topic_lag = _Lines("topic_lag_messages", "Messages of the topic not yet consumed by the group")
    topic_seconds = _Lines("topic_lag_seconds", "Age of the topic's oldest unconsumed message")
    queue_lag = _Lines("queue_lag_messages", "Messages of the queue not yet consumed")
    for row in rows:
        cluster, group = row.cluster.name, row.summary["group"]
        labels = _pairs(cluster=cluster, group=group)  # escaped once per group, not per series
        for field, family in values.items():
            value = row.summary.get(field)
            if value is not None:
                family.add(labels, float(value))
        if row.age is not None:
            age.add(labels, row.age)
        stale.add(labels, 1.0 if row.stale else 0.0)
        for state in SEVERITY:
            health.add(f'{labels},state="{state}"', 1.0 if state == row.health else 0.0)
        seconds = drain_sort_value(row.summary.get("drain"))
        if seconds is not None:  # unknown (not enough history): no series
            drain.add(labels, math.inf if seconds >= NEVER else float(seconds))
        kept = row.summary.get("retention") or {}
        if kept.get("state") in ("AT_RISK", "SAFE"):  # unknown: no series
            retention.add(labels, float(sum(q["lost"] for q in kept["queues"])))
        for topic, lags in sorted((row.summary.get("topic_lags") or {}).items()):
            pairs = f'{labels},topic="{_escape(topic)}"'
            if lags.get("lag") is not None:
                topic_lag.add(pairs, float(lags["lag"]))
            if lags.get("lag_seconds") is not None:
                topic_seconds.add(pairs, float(lags["lag_seconds"]))
        for q in (per_queue or {}).get((cluster, group), []):
            if q.lag is not None and not q.retry:
                pairs = _pairs(cluster=cluster, group=group, topic=q.topic, broker=q.broker, queue_id=str(q.queue_id))
                queue_lag.add(pairs, float(q.lag))
    families = [*values.values(), age, stale, health, drain, retention, topic_lag, topic_seconds]
    if per_queue is not None:
        families.append(queue_lag)
    return "".join(f.text() for f in families)


def cluster_families(states: list[ClusterState]) -> list[GaugeMetricFamily]:
    state = _gauge("cluster_state", "The cluster's poll state (one series per state)", ("cluster", "state"))
    duration = _gauge("cluster_poll_duration_seconds", "How long the cluster's last poll took", ("cluster",))
    polled = _gauge("cluster_poll_age_seconds", "Seconds since the cluster's last poll ended", ("cluster",))
    data = _gauge("cluster_data_age_seconds", "Seconds since the cluster's last successful poll", ("cluster",))
    groups = _gauge("cluster_groups", "Consumer groups the last poll read", ("cluster",))
    broker = _gauge("broker_state", "Each broker as the last poll saw it (one series per state)",
                    ("cluster", "broker", "state"))  # fmt: skip
    for s in states:
        name = s.cluster.name
        _state_set(state, [name], CLUSTER_STATES, s.state)
        if s.meta is None:
            continue
        duration.add_metric([name], s.meta.duration)
        polled.add_metric([name], s.polled_age)
        if s.data_age is not None:
            data.add_metric([name], s.data_age)
        groups.add_metric([name], float(s.groups))
        for b in s.meta.brokers:
            _state_set(broker, [name, b.name], BROKER_STATES, b.state)
    return [state, duration, polled, data, groups, broker]


def job_families(changes: dict[tuple[str, str], int], redrives: dict[str, int]) -> list[GaugeMetricFamily]:
    """Change requests by kind and state, and redrive jobs by state (counts, the database's)."""
    requests = _gauge("change_requests", "Change requests (resets, redrives) by kind and state", ("kind", "state"))
    for (kind, state), count in sorted(changes.items()):
        requests.add_metric([kind, state], float(count))
    jobs = _gauge("redrive_jobs", "DLQ redrive jobs by state", ("state",))
    for state, count in sorted(redrives.items()):
        jobs.add_metric([state], float(count))
    return [requests, jobs]


def capture_families(captures: dict[tuple[str, str], int]) -> list[CounterMetricFamily]:
    """Thread-stack captures per group, counted from the audit log (append-only: a counter)."""
    family = CounterMetricFamily("rocketmq_console_stack_captures", "Thread-stack captures of a group's clients",
                                 labels=("cluster", "group"))  # fmt: skip
    for (cluster, group), count in sorted(captures.items()):
        family.add_metric([cluster, group], float(count))
    return [family]


class Snapshot(Collector):
    """A registry's one collector: the families computed for this scrape."""

    def __init__(self, families: list[GaugeMetricFamily]):
        self.families = families

    def collect(self):
        return iter(self.families)
