"""What the demo shows, made at its start: topics and traffic that put groups in every state
the console knows (RocketMQ 5 gRPC consumers through the proxy too), alert rules for the Alerts
page and, with `--sso`, the Keycloak teams' grants. Each may run again on the same database.

The console's modules are imported where they are used: the demo sets the environment up and
Django reads its settings before any of this runs (demo.py).
"""

from __future__ import annotations

import time

from .proxy import LocalProxy
from .rocketmq import LocalRocketMQ
from .traffic import Harness


def alert_rules() -> None:
    """Rules to show on the Alerts page (no channel: an admin adds webhooks, mail, Alertmanager)."""
    from consumers.alerts.models import AlertRule

    # the demo's traffic starts, stops and fails on purpose, on a loaded machine: a state must hold
    # a minute to fire and be gone five to resolve, or the page fills with fire/resolve pairs
    calm = {"for_seconds": 60, "keep_firing_seconds": 300}
    rules = {
        "groups stopped, stalled or losing messages": {"condition": "state", "severity": "critical",
                                                       "states": ["STOPPED", "STALLED", "OFFSET_EXPIRED"], **calm},
        "rebalance storms and retry storms": {"condition": "state", "states": ["REBALANCE_STORM", "RETRY_STORM"],
                                              **calm},
        "a broker missing or not answering": {"condition": "broker_missing", "severity": "critical", **calm},
    }  # fmt: skip
    for name, fields in rules.items():
        AlertRule.objects.get_or_create(name=name, defaults=fields)


# with --sso: the Keycloak teams' grants (devstack/keycloak/console-realm.json), each team the
# operator of its own groups and topics; the local approver and admin approve their requests
TEAM_GRANTS = {
    "payments": {"groups": "payments-* billing-*", "topics": "payments"},
    "orders": {"groups": "orders-*", "topics": "orders"},
}


def team_grants() -> None:
    from consumers.identity import Grant

    for team, scope in TEAM_GRANTS.items():
        Grant.objects.update_or_create(
            subject_kind=Grant.Subject.IDP_GROUP, subject=team, role="operator",
            defaults={"clusters": "*", **scope, "note": "the demo's team"},
        )  # fmt: skip


def start_traffic(harness: Harness, rocketmq: LocalRocketMQ) -> None:
    """Topics and groups that show every state the console knows."""
    import asyncio

    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import TopicConfig

    async def create_topics():
        async with AdminClient(rocketmq.namesrv_addr) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            for topic, queues in (("orders", 4), ("payments", 2), ("audit-log", 1)):
                await client.actions.create_or_update_topic(TopicConfig(topic, queues, queues), masters)

    asyncio.run(create_topics())
    quiet = {"quiet": True}
    harness.produce("orders", -1, rate=20, wait=False, binaryEvery=9, largeEvery=13, **quiet)
    harness.produce("payments", -1, rate=5, wait=False, **quiet)
    harness.produce("audit-log", -1, rate=2, wait=False, **quiet)
    harness.consume("orders-service", "orders", **quiet)
    # one thread sleeping 100 ms a message: 10/s against 20/s produced, so it falls behind
    harness.consume("orders-analytics", "orders", threads=1, sleepMs=100, **quiet)
    harness.consume("orders-fulfilment", "orders", mode="stalled", **quiet)
    harness.consume("payments-worker", "payments", mode="failing", failEvery=10, maxReconsumeTimes=2, **quiet)
    harness.consume("payments-ledger", "payments", orderly=True, **quiet)
    for i in range(2):
        harness.consume("audit-mirror", "audit-log", model="BROADCASTING", instanceName=f"mirror-{i}", **quiet)
    # consumes a while, then goes away for good: STOPPED with a growing lag
    billing = harness.consume("billing-legacy", "payments", **quiet)
    time.sleep(3)
    billing.stop()


def start_grpc_traffic(harness: Harness, proxy: LocalProxy) -> None:
    """RocketMQ 5 consumers on "shipments": through the proxy (gRPC SDK, POP) a healthy
    SimpleConsumer and PushConsumer, a slow SimpleConsumer that leaves two messages in three
    unacked (in flight), one whose every delivery fails (max attempts 2, then the DLQ) and a
    FIFO one (consumeMessageOrderly); and a classic remoting consumer switched to POP."""
    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import SubscriptionGroupConfig, TopicConfig

    async def prepare():
        async with AdminClient(proxy.namesrv_addr) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            config = TopicConfig("shipments", 2, 2, attributes={"message.type": "NORMAL"})
            await client.actions.create_or_update_topic(config, masters)
            for group in (SubscriptionGroupConfig("shipments-failing", retry_max_times=1),
                          SubscriptionGroupConfig("shipments-sequencer", consume_message_orderly=True)):  # fmt: skip
                await client.actions.create_or_update_subscription_group(group, masters)
            await client.actions.set_pop_mode("shipments", "shipments-popper", masters)

    import asyncio

    asyncio.run(prepare())
    harness.produce("shipments", -1, rate=10, wait=False, quiet=True)
    for group, kind, mode in (
        ("shipments-tracker", "simple", "healthy"),
        ("shipments-notifier", "push", "healthy"),
        ("shipments-audit", "simple", "slow"),
        ("shipments-failing", "simple", "failing"),
        ("shipments-sequencer", "simple", "healthy"),
    ):
        harness.grpc_consume(proxy.grpc_endpoint, group, "shipments", kind=kind, mode=mode)
        time.sleep(2)  # a loaded 2-core machine: gRPC clients start a few seconds apart
    harness.consume("shipments-popper", "shipments", pop=True, quiet=True)
