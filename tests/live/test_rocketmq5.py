"""RocketMQ 5's own clients, seen truthfully: a real rocketmq-proxy in cluster mode beside the
session's brokers, the official gRPC Java SDK (rocketmq-client-java 5.x) through it. Truth:
the clients' own counts, and mqadmin pointed at the proxy (`consumerConnection -b`)."""

from __future__ import annotations

import json
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


@pytest.mark.django_db(transaction=True)
def test_a_reset_of_a_grpc_group_is_previewed_online_and_verified_by_what_the_client_received(
    cluster, redis, proxy, mqadmin, traffic, names, personas, settings
):
    from consumers.changes.models import State
    from consumers.changes.workflow import approve
    from consumers.core import Actor
    from consumers.resets import execute
    from consumers.resets.services import request_reset

    settings.RESET_VERIFY_SECONDS = 10
    topic = grpc_topic(mqadmin, names.topic("grpc-reset"))
    group = names.group("grpc-reset")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push")
    traffic.produce(topic, 40)
    consumer.wait_counts(lambda c: c["acked"] >= 40, 90, "acked 40")
    wait(lambda: sum(r.diff for r in _progress(mqadmin, group, topic)) == 0, 30, "the pops are committed")
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "shift", "shift": -5},
        reason="replay the last five of each queue",
    )  # fmt: skip
    assert request.plan["online"] is True and request.plan["clients"] == [consumer.client_id]
    assert request.plan["totals"][topic]["reconsumed"] == 20  # 4 queues
    before = consumer.status()["received"]
    approve(request, actor=Actor(personas["approver"]))
    done = execute.execute_reset(request.pk)
    assert done.state == State.DONE, done.result
    assert all(check["ok"] for check in done.result["verification"].values())
    # the client's own count: exactly the 20 replayed messages came again, nothing more
    counts = consumer.wait_counts(lambda c: c["received"] >= before + 20, 60, "the replay arrived")
    time.sleep(3)
    assert consumer.status()["received"] == before + 20 and counts["distinct"] == 40


def _progress(mqadmin, group: str, topic: str):
    return [r for r in parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-t", topic).out).rows
            if r.topic == topic]  # fmt: skip


def test_a_grpc_groups_dead_letters_show_their_topic_and_true_deliveries_and_are_redriven_truly(
    cluster, redis, proxy, mqadmin, traffic, names, viewer_client, personas, namesrv
):
    """A SimpleConsumer that never acks, max attempts 3 (retryMaxTimes 2): each message is
    delivered three times (the client's own count), then dead-lettered with its POP retry
    topic as origin and reconsume times 4."""
    topic = grpc_topic(mqadmin, names.topic("grpc-dlq"))
    group = names.group("grpc-dlq")
    grpc_group(mqadmin, namesrv, group, topic, max_retries=2)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple", mode="failing",
                                    invisibleSeconds=10)  # fmt: skip
    bystander_group = grpc_group(mqadmin, namesrv, names.group("grpc-bystander"), topic)
    bystander = traffic.grpc_consume(proxy.grpc_endpoint, bystander_group, topic, kind="push")
    traffic.produce(topic, 3)

    def dead() -> list[dict]:
        answer = viewer_client.get(f"/api/dlq/local/{group}/messages/")
        return answer.json().get("messages", []) if answer.status_code == 200 else []

    wait(lambda: len(dead()) == 3, 150, "three dead letters")
    counts = consumer.status()
    assert counts["distinct"] == 3 and counts["maxDeliveries"] == 3 and counts["acked"] == 0, counts
    rows = dead()
    assert {r["original_topic"] for r in rows} == {topic}  # not %RETRY%{group}_{topic}
    assert {r["deliveries"] for r in rows} == {3}, [(r["deliveries"], r["reconsume_times"]) for r in rows]
    assert all(r["pop_retry_topic"] in (f"%RETRY%{group}_{topic}", f"%RETRY%{group}+{topic}") for r in rows)
    # the broker's side of it: its POP retry topic was written once after every failed delivery,
    # the last one too, so the group's redeliveries are the retry writes less its dead letters
    # (what RETRY_STORM counts); the DLQ overview says which kind of consumer sent them
    assert poll_cluster(cluster).status == "ok"
    doc = doc_of(redis, cluster, group)
    writes = sum(q.max for q in doc.queues if q.retry)
    assert writes - doc.dlq_count == counts["received"] - counts["distinct"] == 6, (writes, doc.dlq_count, counts)
    page = viewer_client.get("/dlq/").content.decode()
    assert f'data-group="{group}"' in page and "gRPC SimpleConsumer (POP, via proxy)" in page

    # back to this group: POP consumers never read %RETRY%{group}, and nothing reaches them alone
    from consumers.core import Actor, ChangeRefused
    from consumers.dlq import redrive, runner
    from consumers.dlq.browse import Selection

    operator = Actor(personas["operator"])
    with pytest.raises(ChangeRefused, match="consumes with POP"):
        redrive.plan_redrive(actor=operator, cluster=cluster, group=group, selection=Selection(), target="group",
                             rate=100)  # fmt: skip
    # to the original topic: the real one, so every group on it gets them once, and no phantom group
    bystander.wait_counts(lambda c: c["acked"] >= 3, 60, "the bystander consumed the originals")
    job = redrive.plan_redrive(actor=operator, cluster=cluster, group=group, selection=Selection(), target="original",
                               rate=100)  # fmt: skip
    done = runner.run_job(job.pk)
    assert (done.state, done.moved, done.total) == ("done", 3, 3)
    counts = bystander.wait_counts(lambda c: c["received"] >= 6, 60, "the bystander received the redriven copies")
    time.sleep(2)
    counts = bystander.status()
    assert (counts["received"], counts["distinct"], counts["maxDeliveries"]) == (6, 6, 1), counts
    assert f"{group}_{topic}" not in _subscription_groups(namesrv)
    consumer.stop()
    bystander.stop()


def test_a_push_consumers_dead_letters_show_the_deliveries_the_client_made(
    cluster, proxy, mqadmin, traffic, names, viewer_client, namesrv
):
    """A PushConsumer whose listener always fails, max attempts 2 (retryMaxTimes 1): the SDK
    forwards each message to the DLQ itself at its last attempt, so the dead letter stores one
    reconsume time fewer than a SimpleConsumer's (which the proxy dead-letters at the pop after
    its last attempt). Oracle: the client's own count of deliveries per message."""
    topic = grpc_topic(mqadmin, names.topic("grpc-push-dlq"))
    group = grpc_group(mqadmin, namesrv, names.group("grpc-push-dlq"), topic, max_retries=1)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push", mode="failing")
    traffic.produce(topic, 4)

    def dead() -> list[dict]:
        answer = viewer_client.get(f"/api/dlq/local/{group}/messages/")
        return answer.json().get("messages", []) if answer.status_code == 200 else []

    wait(lambda: len(dead()) == 4, 150, "four dead letters")
    counts = consumer.status()
    assert (counts["distinct"], counts["maxDeliveries"], counts["received"]) == (4, 2, 8), counts
    assert [r["deliveries"] for r in dead()] == [2] * 4, [(r["deliveries"], r["reconsume_times"]) for r in dead()]
    consumer.stop()


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


def _subscription_groups(namesrv: str) -> set[str]:
    from consumers.rocketmq import AdminClient
    from tests.conftest import run

    async def read():
        async with AdminClient(namesrv) as client:
            masters = (await client.topology.cluster_info()).masters()
            return {g for a in masters.values() for g in await client.topology.subscription_groups(a)}

    return run(read())


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


@pytest.mark.django_db(transaction=True)
def test_a_reset_of_a_slow_simple_consumer_to_earliest_is_done_and_the_client_receives_it_all_again(
    cluster, redis, proxy, mqadmin, traffic, names, personas, settings
):
    """A SimpleConsumer acking one message in three (the rest in flight for 60 s). After a reset
    to earliest the request ends done, verified from the consumer's side (its popped position
    moved on from 0), and the client's own count shows every message delivered again."""
    from consumers.changes.models import State
    from consumers.changes.workflow import approve
    from consumers.core import Actor
    from consumers.resets import execute
    from consumers.resets.defects import IN_FLIGHT_NOTE
    from consumers.resets.services import request_reset

    settings.RESET_VERIFY_SECONDS = 10
    topic = grpc_topic(mqadmin, names.topic("grpc-slow-reset"))
    group = names.group("grpc-slow-reset")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="simple", mode="slow", ackEvery=3,
                                    invisibleSeconds=60)  # fmt: skip
    try:
        traffic.produce(topic, 30)
        counts = consumer.wait_counts(_all_received_and_settled(30), 60, "all 30 received, each acked or hidden")
        wait(lambda: sum(r.diff for r in _progress(mqadmin, group, topic)) == 0, 30, "the pops are committed")
        request = request_reset(actor=Actor(personas["operator"]), cluster=cluster, group=group,
                                params={"strategy": "earliest"}, reason="replay all")  # fmt: skip
        assert request.plan["online"] is True and request.plan["pop"] is True
        assert request.plan["warnings"] == [IN_FLIGHT_NOTE]  # not FIFO: no known defect applies
        assert request.plan["totals"][topic]["reconsumed"] == 30
        before = consumer.status()["received"]
        approve(request, actor=Actor(personas["approver"]))
        done = execute.execute_reset(request.pk)
        assert done.state == State.DONE, json.dumps(done.result, indent=1)
        assert all(check["ok"] for check in done.result["verification"].values()), done.result["verification"]
        counts = consumer.wait_counts(lambda c: c["received"] >= before + 30, 60, "all 30 again")
        assert counts["distinct"] == 30  # the same 30 messages, nothing new
    finally:
        consumer.stop()


@pytest.mark.django_db(transaction=True)
def test_a_reset_preview_with_the_proxy_down_says_the_online_state_is_unknown(
    cluster, redis, proxy, mqadmin, traffic, names, viewer_client
):
    topic = grpc_topic(mqadmin, names.topic("grpc-nopx"))
    group = names.group("grpc-nopx")
    grpc_group(mqadmin, cluster.namesrv_addrs, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push")
    traffic.produce(topic, 8)
    consumer.wait_counts(lambda c: c["acked"] >= 8, 90, "acked 8")
    consumer.stop()
    proxy.kill()
    try:
        from consumers.resets.services import preview

        plan = preview(cluster, group, {"strategy": "earliest"})
        assert plan["online"] is None and plan["clients"] == []
        page = viewer_client.get(f"/groups/local/{group}/reset/preview/", {"strategy": "earliest"})
        assert page.status_code == 200
        assert "online state unknown (a proxy could not be read)" in page.content.decode()
    finally:
        proxy.start()


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


def test_a_message_tracked_through_a_grpc_group_that_acked_it_and_one_that_holds_it(
    cluster, redis, proxy, mqadmin, traffic, names
):
    """Track for POP consumers: the brokers' pop positions (mqadmin consumerProgress) and the
    clients' own counts are the oracle. A group that popped everything with nothing in flight at
    the poll consumed it; one that holds it (popped, never acked) popped it, ack unknown."""
    from consumers.messages import services

    topic = grpc_topic(mqadmin, names.topic("grpc-track"))
    acking = grpc_group(mqadmin, cluster.namesrv_addrs, names.group("grpc-ack"), topic)
    holding = grpc_group(mqadmin, cluster.namesrv_addrs, names.group("grpc-hold"), topic)
    sent = traffic.produce(topic, 6).sent
    acks = traffic.grpc_consume(proxy.grpc_endpoint, acking, topic, kind="simple")
    holds = traffic.grpc_consume(proxy.grpc_endpoint, holding, topic, kind="simple", mode="slow", ackEvery=1000,
                                 invisibleSeconds=300)  # fmt: skip
    acks.wait_counts(lambda c: c["acked"] >= 6, 90, "acked 6")
    held = holds.wait_counts(lambda c: c["received"] >= 6, 90, "held 6")
    assert held["acked"] == 0

    def popped_all(group: str) -> bool:
        rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-t", topic).out).rows
        return all(r.diff == 0 for r in rows if r.topic == topic)

    for group in (acking, holding):  # the brokers' pop positions are past every message
        wait(lambda group=group: popped_all(group), 30, f"{group} popped all")
    assert poll_cluster(cluster).status == "ok"
    message = sent[3]
    found = services.message(cluster, topic, message.broker, message.queue_id, message.queue_offset)
    verdicts = {g.group: g for g in services.track_message(cluster, found).groups}
    assert verdicts[acking].verdict == "consumed" and "acknowledged" in verdicts[acking].why
    assert verdicts[holding].verdict == "popped" and "in flight at the last poll" in verdicts[holding].why
    rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", holding, "-t", topic).out).rows
    committed = next(r.consumer_offset for r in rows if (r.topic, r.broker, r.queue_id) == (
        topic, message.broker, message.queue_id))  # fmt: skip
    assert verdicts[holding].committed == committed > message.queue_offset
