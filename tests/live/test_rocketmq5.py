"""RocketMQ 5's own clients, seen truthfully: a real rocketmq-proxy in cluster mode beside the
session's brokers, the official gRPC Java SDK (rocketmq-client-java 5.x) through it. Truth:
the clients' own counts, and mqadmin pointed at the proxy (`consumerConnection -b`). Resets,
dead letters and tracking of their groups: test_rocketmq5_actions.py."""

from __future__ import annotations

import time

import pytest

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from devstack.mqadmin import parse_consumer_connection, parse_consumer_progress
from devstack.proxy import LocalProxy
from tests.conftest import SESSION_DIR
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.fixture(scope="module")
def proxy(rmq_runtime, rocketmq):
    local = LocalProxy(rmq_runtime, rocketmq.namesrv_addr, SESSION_DIR / "proxy", cluster=rocketmq.cluster).start()
    yield local
    local.stop(grace=2)  # throwaway: no need to wait for a graceful shutdown


@pytest.fixture
def cluster(db, redis, history_dir, namesrv, proxy, rocketmq, settings):
    settings.ROCKETMQ_POLL_DEADLINE = 12
    return Cluster.objects.create(
        name="local", namesrv_addrs=namesrv, proxy_addrs=proxy.remoting_address, broker_metrics=rocketmq.metrics_urls
    )


def grpc_topic(mqadmin, topic: str) -> str:
    """A topic gRPC clients may use: its message type is set (NORMAL)."""
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2", "-a", "+message.type=NORMAL")
    return topic


def grpc_group(mqadmin, namesrv: str, group: str, topic: str, *, max_retries: int = 3) -> str:
    """A group for gRPC consumers (max attempts = retries + 1) that starts at the beginning of
    each queue: its committed offsets are 0 before any client pops, so no message produced
    before the first pop is skipped (a new POP group would start at the end)."""
    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import MessageQueue
    from tests.conftest import run

    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group, "-r", str(max_retries))

    async def start_at_zero():
        async with AdminClient(namesrv) as client:
            route = await client.topology.topic_route(topic, max_age=0)
            for mq in route.read_queues():
                await client.actions.update_consumer_offset(group, MessageQueue(topic, mq.broker_name, mq.queue_id), 0)

    run(start_at_zero())
    return group


def proxy_clients(mqadmin, proxy, group: str) -> set[str]:
    """What mqadmin reads from the proxy's remoting port: the oracle for who is online."""
    result = mqadmin.run("consumerConnection", "-g", group, "-b", proxy.remoting_address, check=False)
    return {c.client_id for c in parse_consumer_connection(result.out).connections}


def doc_of(redis, cluster, group):
    return snapshots.read_detail(redis, cluster.pk, group)


def test_grpc_consumers_are_online_with_their_clients_and_kind_and_stopped_when_they_stop(
    cluster, redis, proxy, mqadmin, traffic, names, viewer_client
):
    topic = grpc_topic(mqadmin, names.topic("grpc"))
    simple_group, push_group = names.group("simple"), names.group("push")
    for group in (simple_group, push_group):
        grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    simple = traffic.grpc_consume(proxy.grpc_endpoint, simple_group, topic, kind="simple")
    push = traffic.grpc_consume(proxy.grpc_endpoint, push_group, topic, kind="push")
    traffic.produce(topic, 40)
    simple.wait_counts(lambda c: c["acked"] >= 40, 90, "simple acked 40")
    push.wait_counts(lambda c: c["acked"] >= 40, 90, "push acked 40")

    # the brokers know no client of these groups: only the proxy does
    theirs = {g: proxy_clients(mqadmin, proxy, g) for g in (simple_group, push_group)}
    assert theirs[simple_group] == {simple.client_id} and theirs[push_group] == {push.client_id}
    assert poll_cluster(cluster).status == "ok"
    for group, kind in ((simple_group, "grpc-simple"), (push_group, "grpc-push")):
        doc = doc_of(redis, cluster, group)
        assert (doc.online, doc.clients, doc.consumption) == (True, 1, kind), (group, doc.online, doc.problems)
        assert {c["client_id"] for c in doc.connections} == theirs[group]
        assert all(c["via"] == "proxy (gRPC)" and c["language"] == "JAVA" for c in doc.connections)
        assert doc.health["state"] != "STOPPED", doc.health
        assert doc.consume_tps is None or doc.consume_tps_note.startswith("pop rate")  # not an ack rate
        codes = {d["kind"] for d in doc.diagnostics}
        assert "assigned-by-broker" in codes and not codes & {"unheld-queues", "clients-without-queues"}, codes
        # lag as mqadmin reads it on the brokers (POP: messages nobody has taken)
        progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-t", topic).out)
        assert doc.lag == sum(r.diff for r in progress.rows if r.topic == topic)
    page = viewer_client.get(f"/groups/local/{simple_group}/").content.decode()
    assert 'data-consumption="grpc-simple"' in page and "gRPC SimpleConsumer" in page and "proxy (gRPC)" in page
    listing = viewer_client.get("/groups/").content.decode()
    assert 'data-consumption="grpc-push"' in listing
    clusters = viewer_client.get("/clusters/").content.decode()
    assert f'data-proxy="{proxy.remoting_address}" data-state="ok"' in clusters

    # a stopped client: offline as soon as the proxy forgets it, STOPPED once messages wait
    simple.stop()
    wait(lambda: not proxy_clients(mqadmin, proxy, simple_group), 60, "the proxy dropped the stopped client")
    traffic.produce(topic, 20)
    assert poll_cluster(cluster).status == "ok"
    doc = doc_of(redis, cluster, simple_group)
    assert doc.online is False and doc.clients == 0 and doc.lag >= 1
    assert doc.health["state"] == "STOPPED", doc.health
    push.stop()


def test_a_dead_proxy_makes_grpc_groups_unknown_not_stopped_while_the_brokers_stay_fresh(
    cluster, redis, proxy, mqadmin, traffic, names, rmq_runtime, rocketmq
):
    topic = grpc_topic(mqadmin, names.topic("grpc-dead"))
    group = names.group("grpc-dead")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple")
    traffic.produce(topic, 10)
    consumer.wait_counts(lambda c: c["acked"] >= 10, 90, "acked 10")
    assert poll_cluster(cluster).status == "ok" and doc_of(redis, cluster, group).online is True
    proxy.kill()
    try:
        traffic.produce(topic, 10)  # lag now: a dead proxy must not make the group look STOPPED
        result = poll_cluster(cluster)
        assert result.status == "degraded"
        doc = doc_of(redis, cluster, group)
        assert doc.online is None and doc.health["state"] == "UNKNOWN", (doc.online, doc.health)
        assert any(p["scope"] == "proxy" and p["target"] == proxy.remoting_address for p in doc.problems)
        assert doc.lag >= 10 and not doc.stale  # the brokers were read: fresh numbers
        meta = snapshots.read_meta(redis, cluster.pk)
        [state] = meta.proxies
        assert state.state == "failing" and state.error and state.failing_since >= meta.polled_at - 1
        assert {b.state for b in meta.brokers} == {"ok"}
    finally:
        consumer.stop()
        proxy.start()  # the module's other tests need it


def test_a_restarted_proxy_leaves_grpc_groups_unknown_until_their_clients_are_back_and_stopped_only_after(
    cluster, redis, proxy, mqadmin, traffic, names, settings
):
    """Two gRPC groups on a proxy that is killed and started again: one whose client lives on
    (it registers with the new proxy at its next heartbeat) and one whose client stopped while
    the proxy was down. Neither is STOPPED at any poll inside the grace window (unknown, the
    restart given as the reason, so no alert); after the window the one without a client is."""
    settings.ROCKETMQ_PROXY_RESTART_GRACE = 300  # longer than this test: the window is moved by hand below
    topic = grpc_topic(mqadmin, names.topic("grpc-restart"))
    alive = grpc_group(mqadmin, cluster.namesrv_addrs, names.group("grpc-restart-alive"), topic)
    gone = grpc_group(mqadmin, cluster.namesrv_addrs, names.group("grpc-restart-gone"), topic)
    consumers = {g: traffic.grpc_consume(proxy.grpc_endpoint, g, topic, kind="simple") for g in (alive, gone)}
    try:
        traffic.produce(topic, 10)
        for consumer in consumers.values():
            consumer.wait_counts(lambda c: c["acked"] >= 10, 90, "acked 10")
        assert poll_cluster(cluster).status == "ok"
        assert all(doc_of(redis, cluster, g).online is True for g in (alive, gone))
        proxy.kill()
        consumers[gone].stop()  # gone for good while the proxy is down
        assert poll_cluster(cluster).status == "degraded"
        assert all(doc_of(redis, cluster, g).online is None for g in (alive, gone))
        proxy.start()
        restarted = time.monotonic()
        traffic.produce(topic, 10)  # lag: a group with no client anywhere would be STOPPED
        polls = 0
        while True:
            poll_cluster(cluster)
            polls += 1
            docs = {g: doc_of(redis, cluster, g) for g in (alive, gone)}
            for group, doc in docs.items():  # neither stopped nor, once back, stalled by the restart
                assert doc.health["state"] not in ("STOPPED", "STALLED"), (group, doc.online, doc.health)
                if doc.online is None:
                    assert "restarted" in doc.clients_note, doc.clients_note
            held = docs[gone]
            assert held.online is None and held.health["state"] == "UNKNOWN", (held.online, held.health)
            if docs[alive].online is True:
                break
            assert time.monotonic() - restarted < 180, "the living SDK client did not register again"
        back = time.monotonic() - restarted
        print(f"\n  the living gRPC client was seen online {back:.0f} s after the proxy restarted ({polls} polls)")
        assert snapshots.read_meta(redis, cluster.pk).proxies[0].restarted_at is not None
        settings.ROCKETMQ_PROXY_RESTART_GRACE = 0  # the window has passed
        poll_cluster(cluster)
        stopped, living = doc_of(redis, cluster, gone), doc_of(redis, cluster, alive)
        assert stopped.online is False and stopped.health["state"] == "STOPPED", (stopped.online, stopped.health)
        assert living.online is True and living.health["state"] != "STOPPED"
    finally:  # the consumers are stopped by the traffic fixture; the module's other tests need the proxy
        if proxy.process is None:
            proxy.start()


def _progress(mqadmin, group: str, topic: str):
    return [r for r in parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-t", topic).out).rows
            if r.topic == topic]  # fmt: skip


def test_messages_in_flight_of_a_slow_pop_group_equal_the_clients_own_count(
    cluster, redis, proxy, mqadmin, traffic, names, viewer_client
):
    """A SimpleConsumer acking one message in three, the rest hidden for 60 s: lag (nobody has
    taken them) is 0, in flight is what the client holds unacked, from the brokers' metrics."""
    topic = grpc_topic(mqadmin, names.topic("grpc-slow"))
    group = names.group("grpc-slow")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple", mode="slow", ackEvery=3,
                                    invisibleSeconds=60)  # fmt: skip
    traffic.produce(topic, 30)
    # settled: the client counts a message as received before its ack returns, so "all 30
    # received" alone can be seen with the 30th ack still in flight (acked 9, in flight 20)
    counts = consumer.wait_counts(_all_received_and_settled(30), 60, "all 30 received, each acked or hidden")
    assert counts["inFlight"] == 20 and counts["acked"] == 10, counts
    assert poll_cluster(cluster).status == "ok"
    doc = doc_of(redis, cluster, group)
    assert (doc.lag, doc.in_flight, doc.in_flight_note) == (0, consumer.status()["inFlight"], None), doc.in_flight_note
    assert 'id="in-flight">20<' in viewer_client.get(f"/groups/local/{group}/").content.decode()
    # without the brokers' metrics: unknown, and why, never 0
    Cluster.objects.filter(pk=cluster.pk).update(broker_metrics="")
    cluster.refresh_from_db()
    assert poll_cluster(cluster).status == "ok"
    doc = doc_of(redis, cluster, group)
    assert doc.in_flight is None and "broker metrics not enabled" in doc.in_flight_note
    consumer.stop()


def _all_received_and_settled(n: int):
    """The client's counts once it has received n distinct messages and finished with each:
    acked, or left hidden (a failed ack is hidden too, so this cannot hide a wrong count)."""
    return lambda c: c["distinct"] == n and c["acked"] + c["inFlight"] >= n


def test_a_remoting_consumer_switched_to_pop_is_seen_popping_without_false_allocation_warnings(
    cluster, redis, mqadmin, traffic, names, viewer_client
):
    """The issue's remoting POP row: a classic push consumer in a group switched to POP with
    mqadmin setConsumeMode. It holds no queue; the console said "16 of 16 queues held by no
    client" and "1 client holds no queue". Truth: the client's own acks, mqadmin's progress."""
    topic = grpc_topic(mqadmin, names.topic("rpop"))
    group = names.group("rpop")
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group)
    mqadmin.run("setConsumeMode", "-c", "DefaultCluster", "-t", topic, "-g", group, "-m", "POP", "-q", "8")
    consumer = traffic.consume(group, topic, pop=True)
    try:
        traffic.produce(topic, 30)
        consumer.wait_acked(30, 90)

        def settled() -> bool:
            assert poll_cluster(cluster).status == "ok"
            found = doc_of(redis, cluster, group)
            return bool(found.pops) and found.lag == 0 and found.in_flight == 0

        wait(settled, 60, "the group's pops are read and its lag is 0")
        doc = doc_of(redis, cluster, group)
        assert (doc.online, doc.clients, doc.consumption) == (True, 1, "pop")
        assert list(doc.pops) == [consumer.client_id]
        kinds = {d["kind"] for d in doc.diagnostics}
        assert {"assigned-by-broker", "pop-drops-failures"} <= kinds
        assert not kinds & {"unheld-queues", "clients-without-queues", "unpopped-queues"}, doc.diagnostics
        # mqadmin's diff for the topic, the console's lag: both 0 with everything acked
        assert sum(r.diff for r in _progress(mqadmin, group, topic)) == doc.lag == 0
        assert doc.health["state"] not in ("STOPPED", "UNKNOWN")
        page = viewer_client.get(f"/groups/local/{group}/").content.decode()
        assert 'id="pops"' in page and "POP (remoting)" in page and "held by no client" not in page
        # the demo switches its group with the console's own client (SET_MESSAGE_REQUEST_MODE):
        # the brokers then list it exactly as the group mqadmin switched
        assert _pop_modes(cluster.namesrv_addrs, topic, names.group("rpop-own")) == {group, names.group("rpop-own")}
    finally:
        consumer.stop()


def _pop_modes(namesrv: str, topic: str, switch: str) -> set[str]:
    from consumers.rocketmq import AdminClient
    from tests.conftest import run

    async def read():
        async with AdminClient(namesrv) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            await client.actions.set_pop_mode(topic, switch, masters)
            found = [await client.topology.pop_modes(a) for a in masters]
            assert found[0] == found[-1]
            return {g for g, topics in found[0].items() if topic in topics}

    return run(read())


def test_a_group_with_remoting_and_grpc_clients_lists_both_and_says_it_is_mixed(
    cluster, redis, proxy, mqadmin, traffic, names
):
    """Oracles: mqadmin's connection list from the brokers (the remoting client) and from the
    proxy's remoting port (the gRPC client)."""
    topic = grpc_topic(mqadmin, names.topic("mixed"))
    group = names.group("mixed")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    classic = traffic.consume(group, topic)
    grpc = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple")
    try:
        traffic.produce(topic, 10)
        from_brokers = {c.client_id for c in parse_consumer_connection(
            mqadmin.run("consumerConnection", "-g", group).out).connections}  # fmt: skip
        from_proxy = proxy_clients(mqadmin, proxy, group) - from_brokers
        assert from_brokers == {classic.client_id} and from_proxy == {grpc.client_id}
        assert poll_cluster(cluster).status == "ok"
        doc = doc_of(redis, cluster, group)
        assert (doc.online, doc.clients, doc.consumption) == (True, 2, "mixed")
        via = {c["client_id"]: c["via"] for c in doc.connections}
        assert via == {classic.client_id: "broker", grpc.client_id: "proxy (gRPC)"}
        [mixed] = [d for d in doc.diagnostics if d["kind"] == "mixed-consumers"]
        assert grpc.client_id in mixed["message"] and mixed["severity"] == "warn"
        assert list(doc.allocation) == [classic.client_id]  # the remoting client holds the queues
        assert not [p for p in doc.problems if p["scope"] == "running-info"]  # no relay asked of the gRPC one
    finally:
        classic.stop()
        grpc.stop()
