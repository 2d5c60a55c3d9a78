"""A small console world without RocketMQ, for walking the pages: one cluster published with
devstack/synthetic.py (a clustering group lagging, one stopped, a broadcasting one, a gRPC one
behind the proxy, a remoting POP one), and what people and workers leave in the database: change
requests in several states (a reset verified, a config change read back), alerts firing,
pending, cleared and resolved, statistics runs, a report and audit events. Every text in it that
a worker would store is stored as a worker stores it (English evidence, codes)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from django.utils import timezone

from consumers.rocketmq.models import ClientConnection, ConsumerConnection
from devstack.synthetic import group, publish

CLUSTER = "east"
# the names the world gives things (groups, topics, brokers, clients, rules): identifiers on any page
NAMES = ("east", "orders", "audit", "fanout", "payments", "popper", "T", "A", "broker-a", "c1", "c2", "stopped",
         "slow-orders", "DefaultCluster", "hook")  # fmt: skip


@dataclass
class World:
    cluster: object
    reset: object  # a reset change request, done and verified
    config: object  # a config change request, done and read back
    pending: object  # a reset request waiting for an approver


def _broadcasting(name: str):
    progress = group(name, lag=3, topic="T")
    progress.connection = ConsumerConnection(
        [ClientConnection("c1", "127.0.0.1:5", "JAVA", 479)], {}, "CONSUME_PASSIVELY", "BROADCASTING", None
    )
    return progress


def _grpc(name: str):
    progress = group(name, lag=5, topic="T")
    progress.via_proxy, progress.consume_tps = True, 2.5
    progress.connection = ConsumerConnection(
        [ClientConnection("c2", "127.0.0.1:6", "JAVA", 0)], {}, "CONSUME_ACTIVELY", "CLUSTERING", None
    )
    return progress


def _pop(name: str):
    progress = group(name, lag=2, topic="T")
    progress.consume_tps = 1.0
    progress.connection = ConsumerConnection(
        [ClientConnection("c1", "127.0.0.1:5", "JAVA", 479)], {}, "CONSUME_POP", "CLUSTERING", None
    )
    return progress


def build(redis, personas) -> World:
    from consumers.models import Cluster

    cluster = Cluster.objects.create(name=CLUSTER, namesrv_addrs="127.0.0.1:9876")
    groups = [group("orders", lag=40), group("audit", lag=7, online=False, topic="A"), _broadcasting("fanout"),
              _grpc("payments"), _pop("popper")]  # fmt: skip
    publish(cluster, redis, groups)
    # the console has watched the cluster for 30 days and never seen audit's clients: abandoned
    from consumers.live import snapshots

    redis.set(snapshots.key(cluster.pk, "watching-since"), time.time() - 30 * 86400)
    reset, config, pending = _changes(cluster, personas)
    _alerts(cluster)
    _statistics(personas)
    _report(personas)
    return World(cluster, reset, config, pending)


def _changes(cluster, personas):
    from consumers.changes import workflow
    from consumers.changes.guards import SYSTEM, Actor
    from consumers.changes.models import State

    operator, approver = Actor(personas["operator"], "10.0.0.1"), Actor(personas["approver"], "10.0.0.2")
    row = {"topic": "T", "broker": "broker-a", "queue_id": 0, "label": "T@broker-a#0", "min": 0, "max": 100,
           "current": 90, "target": 100, "clamped": False, "never_committed": False, "note": None,
           "delta": 10}  # fmt: skip
    totals = {"T": {"queues": 1, "reconsumed": 0, "skipped": 10}}
    plan = {"params": {"strategy": "latest"}, "rows": [row], "totals": totals}

    def submitted(kind: str, params: dict, plan: dict, reason: str):
        return workflow.submit(actor=operator, cluster=cluster, group="orders", kind=kind, params=params, plan=plan,
                               reason=reason)  # fmt: skip

    def finished(request, result: dict):
        # approved as workflow.approve would, without reading the broker again
        workflow.transition(request, {State.PENDING}, State.APPROVED, actor=approver, action="approve",
                            decided_by=approver.user, decided_at=timezone.now())  # fmt: skip
        running = workflow.transition(request, {State.APPROVED}, State.RUNNING, actor=SYSTEM, action="run")
        return workflow.transition(running, {State.RUNNING}, State.DONE, actor=SYSTEM, action="result",
                                   details={"applied": 1}, result=result)  # fmt: skip

    reset = finished(
        submitted("reset", {"strategy": "latest"}, plan, "跳过积压的消息"),
        {"applied": {"T@broker-a#0": 100}, "replaced": {"T@broker-a#0": 90}, "watched_seconds": 2.0,
         "verification": {"T@broker-a#0": {"target": 100, "committed": 100, "replaced": 90, "ok": True,
                                           "note": "holds the target"}}},
    )  # fmt: skip
    after = {"retryMaxTimes": 3}
    config_plan = {"brokers": [{"broker": "broker-a", "address": "127.0.0.1:10911", "before": {"retryMaxTimes": 16},
                                "after": after}]}  # fmt: skip
    read_back = {"broker-a": {"ok": True, "values": after, "note": "holds the new values"}}
    config = finished(
        submitted("config", {"action": "edit", "after": after}, config_plan, "减少重试次数"),
        {"applied": ["broker-a"], "read_back": read_back},
    )
    pending = submitted("reset", {"strategy": "latest"}, plan, "再次跳过")
    return reset, config, pending


def _alerts(cluster) -> None:
    from consumers.alerts.models import Alert, AlertRule, Channel, Delivery

    hook = Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/hook")
    stopped = AlertRule.objects.create(name="stopped", condition="state", states=["STOPPED"], severity="critical")
    slow = AlertRule.objects.create(name="slow-orders", condition="lag_seconds", threshold=60, severity="warning",
                                    for_seconds=300)  # fmt: skip
    now = timezone.now()
    finding = {"state": "STOPPED", "evidence": "no client is online and lag is 7"}
    firing = Alert.objects.create(rule=stopped, cluster=cluster, scope="group", subject="audit", state="firing",
                                  evidence="STOPPED: no client is online and lag is 7", findings=[finding],
                                  started_at=now, fired_at=now)  # fmt: skip
    Delivery.objects.create(alert=firing, channel=hook, event="firing", state="sent", next_attempt_at=now)
    Alert.objects.create(rule=slow, cluster=cluster, scope="group", subject="orders", state="pending",
                         evidence="lag is 90 s, above 60 s (lag 40 messages)", started_at=now)  # fmt: skip
    earlier = now - dt.timedelta(hours=2)
    Alert.objects.create(rule=slow, cluster=cluster, scope="group", subject="orders", state="cleared",
                         evidence="lag is 75 s, above 60 s (lag 12 messages)", started_at=earlier,
                         ended_at=earlier + dt.timedelta(minutes=2),
                         end_evidence="lag is 10 s (threshold 60 s)")  # fmt: skip
    Alert.objects.create(rule=stopped, cluster=cluster, scope="group", subject="orders", state="resolved",
                         evidence="STOPPED: no client is online and lag is 40", started_at=earlier, fired_at=earlier,
                         ended_at=earlier + dt.timedelta(minutes=30), end_evidence="health is OK")  # fmt: skip


def _statistics(personas) -> None:
    from consumers.stats.models import StatsRun

    today = timezone.now().date()
    common = {"first": today - dt.timedelta(days=1), "last": today - dt.timedelta(days=1), "clusters": [CLUSTER],
              "master": "local[2]"}  # fmt: skip
    StatsRun.objects.create(trigger="nightly", state="succeeded", input_rows=10, output_rows=4, **common)
    StatsRun.objects.create(trigger="page", requested_by=personas["operator"], state="failed", **common)


def _report(personas) -> None:
    from consumers.reports.models import Report

    today = timezone.now().date()
    Report.objects.create(title="east", clusters=[CLUSTER], first=today - dt.timedelta(days=7), last=today,
                          formats=["csv"], created_by=personas["viewer"], state="failed", error="",
                          expires_at=timezone.now() + dt.timedelta(days=30))  # fmt: skip
