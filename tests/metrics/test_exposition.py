"""The per-group families are written straight to the text format (the library's per-sample
checks were most of a 10,000-group scrape): the bytes must be those prometheus_client's own
generate_latest writes for the same samples, awkward label values and numbers included."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from consumers.live.documents import QueueRow
from consumers.live.health import SEVERITY
from consumers.live.selectors import GroupRow
from consumers.metrics.exposition import Snapshot, group_text
from consumers.models import Cluster

HELP = {  # name: (documentation, labels), in the order /metrics gives them
    "group_lag_messages": "Messages not yet consumed (retry topics apart)",
    "group_lag_seconds": "Age of the oldest unconsumed message, worst queue",
    "group_retry_lag_messages": "Messages waiting in the group's %RETRY% topic",
    "group_dlq_messages": "Messages in the group's dead-letter queue",
    "group_consume_tps": "Messages consumed per second, as the brokers report",
    "group_clients": "Clients of the group online",
    "group_in_flight_messages": "POP messages taken and not yet acked",
    "group_tag_lag_messages": "Of the lag, the messages the group's tags take (tag filters)",
}
FIELDS = ["lag", "lag_seconds", "retry_lag", "dlq_count", "consume_tps", "clients", "in_flight", "tag_lag"]


def queue(topic, queue_id, lag, retry=False):
    return QueueRow(topic=topic, broker='b"\\1', queue_id=queue_id, retry=retry, min=0, max=lag, consumer=0, lag=lag,
                    lag_seconds=None, lag_seconds_note=None, pull=None, last_consume_ms=None, clients=[],
                    expired=False, as_of=1.0)  # fmt: skip


def rows():
    east = Cluster(name="east")
    odd = 'we"ird\\na\nme'  # a quote, a backslash and a newline
    return [
        GroupRow(east, {"group": "orders", "lag": 12345678, "lag_seconds": 0.25, "retry_lag": 0, "dlq_count": None,
                        "consume_tps": 1e-7, "clients": 3, "in_flight": None, "health": {"state": "STALLED"},
                        "drain": {"state": "NOT_DRAINING", "seconds": None}, "tag_lag": 4_000,
                        "retention": {"state": "AT_RISK", "queues": [{"lost": 120}, {"lost": 3}]},
                        "topic_lags": {"T2": {"lag": 5, "lag_seconds": None}, odd: {"lag": 1, "lag_seconds": 2.5}}},
                 age=4.5, stale=False),
        GroupRow(east, {"group": odd, "lag": None, "health": None, "topic_lags": {}}, age=None, stale=True),
        GroupRow(east, {"group": "draining", "lag": 7, "health": {"state": "CATCHING_UP"}, "topic_lags": {},
                        "retention": {"state": "UNKNOWN", "queues": [], "reason": "config unread"},
                        "drain": {"state": "DRAINING", "seconds": 61.5}}, age=1.0, stale=False),
        GroupRow(east, {"group": "drained", "lag": 0, "health": {"state": "OK"}, "topic_lags": {},
                        "retention": {"state": "SAFE", "queues": []},
                        "drain": {"state": "DRAINED", "seconds": 0.0}}, age=1.0, stale=False),
        GroupRow(east, {"group": "new", "lag": 9, "health": {"state": "OK"}, "topic_lags": {},
                        "drain": {"state": "UNKNOWN", "seconds": None}}, age=1.0, stale=False),
    ]  # fmt: skip


# the drain forecast's series by hand: none while unknown, +Inf while not draining
DRAIN_VALUE = {"DRAINED": lambda d: 0.0, "DRAINING": lambda d: d["seconds"], "NOT_DRAINING": lambda d: float("inf")}


def library_text(rows, per_queue) -> bytes:
    """The same samples through GaugeMetricFamily and generate_latest: the oracle."""
    key = ["cluster", "group"]
    families = [GaugeMetricFamily(f"rocketmq_console_{n}", d, labels=key) for n, d in HELP.items()]
    age = GaugeMetricFamily("rocketmq_console_group_data_age_seconds", "Age of the group's last read", labels=key)
    stale = GaugeMetricFamily(
        "rocketmq_console_group_stale",
        "1 when the group's data is older than its cluster's staleness bound",
        labels=key,
    )
    health = GaugeMetricFamily(
        "rocketmq_console_group_health", "The group's health state (one series per state)", labels=[*key, "state"]
    )
    drain = GaugeMetricFamily(
        "rocketmq_console_group_drain_seconds",
        "Forecast seconds until the group's lag is consumed (+Inf: not at this rate)",
        labels=key,
    )
    retention = GaugeMetricFamily(
        "rocketmq_console_group_retention_loss_messages",
        "Messages the brokers' retention will delete before the group reads them, within the horizon",
        labels=key,
    )
    topic_lag = GaugeMetricFamily(
        "rocketmq_console_topic_lag_messages",
        "Messages of the topic not yet consumed by the group",
        labels=[*key, "topic"],
    )
    topic_seconds = GaugeMetricFamily(
        "rocketmq_console_topic_lag_seconds", "Age of the topic's oldest unconsumed message", labels=[*key, "topic"]
    )
    queue_lag = GaugeMetricFamily("rocketmq_console_queue_lag_messages", "Messages of the queue not yet consumed",
                                  labels=[*key, "topic", "broker", "queue_id"])  # fmt: skip
    for row in rows:
        labels = [row.cluster.name, row.summary["group"]]
        for field, family in zip(FIELDS, families, strict=True):
            if row.summary.get(field) is not None:
                family.add_metric(labels, float(row.summary[field]))
        if row.age is not None:
            age.add_metric(labels, row.age)
        stale.add_metric(labels, float(row.stale))
        for state in SEVERITY:
            health.add_metric([*labels, state], float(state == row.health))
        forecast = row.summary.get("drain")
        if forecast and forecast["state"] in DRAIN_VALUE:
            drain.add_metric(labels, DRAIN_VALUE[forecast["state"]](forecast))
        kept = row.summary.get("retention")
        if kept and kept["state"] != "UNKNOWN":  # unknown: no series
            retention.add_metric(labels, float(sum(q["lost"] for q in kept["queues"])))
        for topic, lags in sorted(row.summary["topic_lags"].items()):
            if lags["lag"] is not None:
                topic_lag.add_metric([*labels, topic], float(lags["lag"]))
            if lags["lag_seconds"] is not None:
                topic_seconds.add_metric([*labels, topic], float(lags["lag_seconds"]))
        for q in per_queue.get((row.cluster.name, row.summary["group"]), []):
            if not q.retry:
                queue_lag.add_metric([*labels, q.topic, q.broker, str(q.queue_id)], float(q.lag))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Snapshot([*families, age, stale, health, drain, retention, topic_lag, topic_seconds, queue_lag]))
    return generate_latest(registry)


def test_the_group_families_are_byte_for_byte_what_the_library_writes():
    per_queue = {("east", "orders"): [queue("T2", 0, 3), queue("T2", 1, 2_000_000), queue("%RETRY%orders", 0, 9, True)]}
    ours = group_text(rows(), per_queue=per_queue).encode()
    assert ours == library_text(rows(), per_queue)
    assert b'group="we\\"ird\\\\na\\nme"' in ours  # escaped, on one line
    assert b'rocketmq_console_group_lag_messages{cluster="east",group="orders"} 1.2345678e+07\n' in ours
    assert b'rocketmq_console_group_drain_seconds{cluster="east",group="orders"} +Inf\n' in ours
    assert b'rocketmq_console_group_drain_seconds{cluster="east",group="draining"} 61.5\n' in ours
    assert b'group_drain_seconds{cluster="east",group="new"}' not in ours
    assert b'rocketmq_console_group_retention_loss_messages{cluster="east",group="orders"} 123.0\n' in ours
    assert b'rocketmq_console_group_retention_loss_messages{cluster="east",group="drained"} 0.0\n' in ours
    assert b'retention_loss_messages{cluster="east",group="draining"}' not in ours  # unknown: no series
    assert b'rocketmq_console_group_tag_lag_messages{cluster="east",group="orders"} 4000.0\n' in ours
