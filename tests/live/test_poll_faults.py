"""Polling through failures on a cluster of its own: unreadable parts keep their last value,
marked with the reason and their age, and the pages say so."""

from __future__ import annotations

import signal
import time

import pytest
from django.utils.html import escape

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.rocketmq import AdminClient
from consumers.rocketmq.fastjson import loads
from consumers.rocketmq.models import MessageQueue
from devstack.mqadmin import MQAdmin, parse_topic_status
from tests.conftest import SESSION_DIR, run
from tests.support.scenarios import prepared_cluster, wait

pytestmark = [pytest.mark.broker, pytest.mark.slow]
TOPIC, GROUP = "T-pf", "G-pf"


@pytest.fixture(scope="module")
def small(rmq_runtime):
    local = prepared_cluster(rmq_runtime, SESSION_DIR / "poll-faults", topic=TOPIC, group=GROUP)
    yield local
    if getattr(local, "mqadmin", None) is not None:
        local.mqadmin.close()
    local.discard()


@pytest.fixture
def cluster(db, redis, history_dir, small, settings):
    settings.ROCKETMQ_POLL_DEADLINE = 4
    settings.ROCKETMQ_REQUEST_TIMEOUT = 1.5
    settings.ROCKETMQ_BROKER_DEADLINE = 1.5
    return Cluster.objects.create(name="small", namesrv_addrs=small.namesrv_addr)


def test_a_frozen_broker_leaves_its_queues_as_last_seen_marked_stale(cluster, redis, small, viewer_client):
    assert poll_cluster(cluster).status == "ok"
    first = snapshots.read_detail(redis, cluster.pk, GROUP).to_wire()
    small.brokers["broker-b"].process.signal(signal.SIGSTOP)
    try:
        result = poll_cluster(cluster)
    finally:
        small.brokers["broker-b"].process.signal(signal.SIGCONT)
    assert result.status == "degraded" and result.duration < 8
    doc = snapshots.read_detail(redis, cluster.pk, GROUP).to_wire()
    rows = {(q["broker"], q["queue_id"]): q for q in doc["queues"] if q["topic"] == TOPIC}
    assert len(rows) == 4
    fresh, stale = rows[("broker-a", 0)], rows[("broker-b", 0)]
    assert fresh["stale_reason"] is None and fresh["as_of"] > first["as_of"]
    assert stale["as_of"] == first["as_of"] and stale["stale_reason"].startswith("broker unreadable:")
    assert (stale["consumer"], stale["lag"]) == (1, rows[("broker-b", 0)]["max"] - 1)
    meta = snapshots.read_meta(redis, cluster.pk)
    assert next(b for b in meta.brokers if b.name == "broker-b").error
    html = viewer_client.get(f"/groups/small/{GROUP}/").content.decode()
    assert 'title="broker unreadable:' in html and "incomplete: broker-b broker unreadable" in html
    assert 'data-state="failing"' in viewer_client.get("/clusters/").content.decode()


def commit(small, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for GROUP on TOPIC, as a consumer would: values the test knows."""

    async def send():
        async with AdminClient(small.namesrv_addr) as client:
            for (broker, queue_id), offset in offsets.items():
                await client.actions.update_consumer_offset(GROUP, MessageQueue(TOPIC, broker, queue_id), offset)

    run(send())


def test_a_hung_broker_fails_alone_named_while_the_other_stays_fresh(cluster, redis, small, viewer_client, settings):
    settings.ROCKETMQ_POLL_DEADLINE = 8
    commit(small, {("broker-b", 0): 2, ("broker-b", 1): 2})
    assert poll_cluster(cluster).status == "ok"
    small.brokers["broker-b"].process.signal(signal.SIGSTOP)
    try:
        for offset in (2, 3):  # broker-a's offsets advance between polls during the hang
            commit(small, {("broker-a", 0): offset, ("broker-a", 1): offset})
            result = poll_cluster(cluster)
            assert result.status == "degraded" and result.duration < settings.ROCKETMQ_POLL_DEADLINE
            doc = snapshots.read_detail(redis, cluster.pk, GROUP)
            rows = {(q.broker, q.queue_id): q for q in doc.queues if q.topic == TOPIC}
            assert [(rows[("broker-a", i)].consumer, rows[("broker-a", i)].stale_reason) for i in (0, 1)] == [
                (offset, None),
                (offset, None),
            ]
            assert all("broker-b" in doc.lag_incomplete and rows[("broker-b", i)].stale_reason for i in (0, 1))
            api = viewer_client.get(f"/api/groups/small/{GROUP}/").json()
            html = viewer_client.get(f"/groups/small/{GROUP}/").content.decode()
            assert api["health"]["state"] == "UNKNOWN" and 'id="health-state">UNKNOWN<' in html
            assert api["stale"] is ("stale-banner" in html) is False  # the group was read, in part
            assert "broker-b" in api["lag_incomplete"] and "incomplete: broker-b" in html
            broker_b = next(b for b in snapshots.read_meta(redis, cluster.pk).brokers if b.name == "broker-b")
            assert broker_b.state == "failing" and broker_b.error
    finally:
        small.brokers["broker-b"].process.signal(signal.SIGCONT)
    assert poll_cluster(cluster).status == "ok"
    ours = {(q.broker, q.queue_id): q.consumer for q in snapshots.read_detail(redis, cluster.pk, GROUP).queues}
    assert ours == {("broker-a", 0): 3, ("broker-a", 1): 3, ("broker-b", 0): 2, ("broker-b", 1): 2}  # as committed


def small_mqadmin(small):
    if getattr(small, "mqadmin", None) is None:
        small.mqadmin = MQAdmin(small.runtime, small.namesrv_addr, SESSION_DIR / "poll-faults-mqadmin")
    return small.mqadmin


def flushed(small, broker: str, offsets: dict[int, int]) -> bool:
    """The broker has written these committed offsets to its store (it flushes every 5 s): what
    a SIGKILL cannot take back."""
    path = small.brokers[broker].store / "config" / "consumerOffset.json"
    try:
        table = loads(path.read_bytes())["offsetTable"].get(f"{TOPIC}@{GROUP}", {})
    except (OSError, ValueError, KeyError):
        return False
    return {int(k): v for k, v in table.items()} == offsets


WHY_MISSING = "(not in the name server; last read "


def test_a_killed_broker_is_named_missing_keeps_its_queues_and_recovers(cluster, redis, small, viewer_client):
    committed = {("broker-a", 0): 5, ("broker-a", 1): 5, ("broker-b", 0): 4, ("broker-b", 1): 4}
    commit(small, committed)
    wait(lambda: flushed(small, "broker-b", {0: 4, 1: 4}), 30, "broker-b flushed the committed offsets")
    assert poll_cluster(cluster).status == "ok"
    last_read = snapshots.read_meta(redis, cluster.pk).polled_at
    before = {(q.broker, q.queue_id): q for q in snapshots.read_detail(redis, cluster.pk, GROUP).queues}
    small.kill_broker("broker-b")
    try:
        wait(lambda: "broker-b" not in run(_masters(small)), 60, "the name server drops broker-b")
        assert poll_cluster(cluster).status == "degraded"
        meta = snapshots.read_meta(redis, cluster.pk)
        missing = next(b for b in meta.brokers if b.name == "broker-b")
        # missing since this poll, the first that did not see it; last read at the one before
        assert missing.state == "missing" and missing.missing_since == pytest.approx(meta.polled_at, abs=0.001)
        assert missing.last_seen_at == pytest.approx(last_read, abs=0.001) and last_read < missing.missing_since
        doc = snapshots.read_detail(redis, cluster.pk, GROUP)
        rows = {(q.broker, q.queue_id): q for q in doc.queues}
        assert set(rows) == set(before)  # no queue vanished with the broker
        for i in (0, 1):
            row = rows[("broker-b", i)]
            assert "missing since" in row.stale_reason and WHY_MISSING in row.stale_reason
            assert (row.consumer, row.max) == (before[("broker-b", i)].consumer, before[("broker-b", i)].max)
        assert (
            doc.lag == sum(q.lag for q in before.values() if not q.retry) and "broker-b missing" in doc.lag_incomplete
        )
        clusters = viewer_client.get("/api/clusters/").json()["clusters"]
        assert clusters[0]["state"] == "degraded"
        html = viewer_client.get("/clusters/").content.decode()
        assert 'data-broker="broker-b" data-state="missing"' in html
        assert "(the first poll that did not find it in the name server)" in html
        # the group page says, on each stale row, as of when and why (not only in a tooltip)
        group_page = viewer_client.get(f"/groups/{cluster.name}/{GROUP}/").content.decode()
        assert group_page.count('<div class="stale-note error">as of ') == 2
    finally:
        started = time.monotonic()
        small.start_broker("broker-b")
        small.wait_registered({"broker-a", "broker-b"})
    recovered = None
    for _ in range(2):  # fresh again within two polls
        if poll_cluster(cluster).status == "ok":
            recovered = time.monotonic() - started
            break
    assert recovered is not None, snapshots.read_meta(redis, cluster.pk)
    print(f"\nrecovered {recovered:.1f} s after the broker was restarted")
    doc = snapshots.read_detail(redis, cluster.pk, GROUP)
    assert doc.lag_incomplete is None and not any(q.stale_reason for q in doc.queues)
    # mqadmin's consumerProgress needs a consumer's retry route, which this group never had:
    # max offsets from its topicStatus, consumer offsets as this test committed them
    status = parse_topic_status(small_mqadmin(small).run("topicStatus", "-t", TOPIC).out)
    assert {(q.broker, q.queue_id): (q.max, q.consumer) for q in doc.queues if q.topic == TOPIC} == {
        (r.broker, r.queue_id): (r.max_offset, committed[(r.broker, r.queue_id)]) for r in status
    }


async def _masters(small) -> dict:
    async with AdminClient(small.namesrv_addr) as client:
        return (await client.topology.cluster_info()).masters()


def test_a_dead_name_server_makes_everything_stale_with_the_reason_then_recovers(
    cluster, redis, small, viewer_client, settings
):
    settings.STALE_MARGIN_SECONDS = 0
    Cluster.objects.filter(pk=cluster.pk).update(poll_interval=1)  # stale after 1 + 4 s
    assert poll_cluster(cluster).status in ("ok", "degraded")
    small.namesrv.stop()
    try:
        result = poll_cluster(cluster)
        assert result.status == "failed" and "no name server answered" in result.error
        meta = snapshots.read_meta(redis, cluster.pk)
        assert meta.status == "failed" and meta.last_success_at < meta.polled_at
        # not read either: unknown, with why and since when, never "ok" copied from the last good poll
        assert {b.name: b.state for b in meta.brokers} == {"broker-a": "unknown", "broker-b": "unknown"}
        assert all(b.error == f"the poll failed: {result.error}" and b.unknown_since for b in meta.brokers)
        html = viewer_client.get("/clusters/").content.decode()
        assert "Last poll failed: ConnectError: no name server answered" in html
        assert html.count('data-state="unknown"') == 2 and 'data-state="ok"' not in html
        time.sleep(5.5)
        api = viewer_client.get(f"/api/groups/small/{GROUP}/").json()
        assert api["stale"] and "the last poll failed: ConnectError" in api["stale_reason"] and api["age_seconds"] > 5
        assert api["health"]["state"] == "UNKNOWN" and api["lag"] is not None  # the last known value stays
        listed = viewer_client.get("/api/groups/").json()["groups"]
        assert all(g["stale"] and g["health"]["state"] == "UNKNOWN" for g in listed)
        assert "stale-banner" in viewer_client.get(f"/groups/small/{GROUP}/").content.decode()
    finally:
        small.restart_namesrv()
        small.wait_registered({"broker-a", "broker-b"})
    assert poll_cluster(cluster).status == "ok"
    assert not viewer_client.get(f"/api/groups/small/{GROUP}/").json()["stale"]


def read_offsets(small) -> dict[tuple[str, int], int]:
    async def read():
        async with AdminClient(small.namesrv_addr) as client:
            masters = (await client.topology.cluster_info()).masters()
            answers = await client.progress.consume_stats_many([(GROUP, a) for a in masters.values()])
            return {(mq.broker_name, mq.queue_id): w.consumer_offset for s in answers for mq, w in s.offsets.items()}

    return run(read())


def test_a_reset_while_a_broker_hangs_names_it_needs_the_choice_and_ends_partial(
    cluster, redis, small, personas, settings
):
    from consumers.changes.guards import Actor, ChangeRefused
    from consumers.changes.models import State
    from consumers.changes.workflow import approve
    from consumers.resets import execute
    from consumers.resets.services import request_reset, undo

    settings.RESET_VERIFY_SECONDS = 3
    committed = {("broker-a", 0): 2, ("broker-a", 1): 2, ("broker-b", 0): 1, ("broker-b", 1): 1}  # max is 2
    commit(small, committed)
    assert poll_cluster(cluster).status == "ok"  # the console knows both brokers and the group's queues
    operator, approver = Actor(personas["operator"], "10.0.0.1"), Actor(personas["approver"], "10.0.0.2")
    small.brokers["broker-b"].process.signal(signal.SIGSTOP)
    try:
        request = request_reset(
            actor=operator, cluster=cluster, group=GROUP, params={"strategy": "earliest"}, reason="broker-b hangs"
        )
        assert {(r["broker"], r["queue_id"]) for r in request.plan["rows"]} == {("broker-a", 0), ("broker-a", 1)}
        [unknown] = request.plan["unreadable"]
        assert unknown["broker"] == "broker-b" and unknown["reason"]
        assert unknown["queues"] == [f"{TOPIC}@broker-b#0", f"{TOPIC}@broker-b#1"]  # as the last poll saw them
        # listed by the name server, not read: never both read and unreadable in one plan
        assert request.plan["brokers_read"] == ["broker-a"] and request.plan["brokers_listed"] == [
            "broker-a",
            "broker-b",
        ]
        with pytest.raises(ChangeRefused, match="could not read broker-b"):
            approve(request, actor=approver)
        request.refresh_from_db()
        assert request.state == State.PENDING
        approve(request, actor=approver, accept_unreadable=True)
        done = execute.execute_reset(request.pk)
    finally:
        small.brokers["broker-b"].process.signal(signal.SIGCONT)
    assert done.state == State.PARTIAL
    assert [u["broker"] for u in done.result["untouched"]] == ["broker-b"]
    assert done.events.filter(action="approve").get().details["left_unreadable"] == ["broker-b"]
    # broker-a at its min offset (0: this topic has kept all its messages), broker-b untouched
    assert read_offsets(small) == {**committed, ("broker-a", 0): 0, ("broker-a", 1): 0}
    back = undo(done, actor=operator, reason="put broker-a back")
    assert back.plan["unreadable"] == [] and set(back.params["offsets"]) == {
        f"{TOPIC}@broker-a#0",
        f"{TOPIC}@broker-a#1",
    }
    approve(back, actor=approver)
    assert execute.execute_reset(back.pk).state == State.DONE
    assert read_offsets(small) == committed


def fill_two_brokers(small, group: str, target: str, per_broker: dict[str, int]) -> None:
    """%DLQ%<group> with one queue on each broker holding `per_broker` messages, and `target` on
    broker-a only (so the job's sends never wait on the frozen broker)."""
    from consumers.rocketmq.codes import dlq_topic
    from consumers.rocketmq.models import TopicConfig

    async def fill():
        async with AdminClient(small.namesrv_addr) as client:
            masters = (await client.topology.cluster_info()).masters()
            await client.actions.create_or_update_topic(TopicConfig(dlq_topic(group), 1, 1), list(masters.values()))
            await client.actions.create_or_update_topic(TopicConfig(target, 2, 2), [masters["broker-a"]])
            for broker, count in per_broker.items():
                queue = MessageQueue(dlq_topic(group), broker, 0)
                for i in range(count):
                    await client.actions.send_message(dlq_topic(group), f"{broker} {i}".encode(), queue=queue,
                                                      properties={"RETRY_TOPIC": TOPIC})  # fmt: skip

    run(fill())


def stored_in(small, topic: str) -> dict[str, int]:
    """Messages per broker of a topic, from mqadmin topicStatus (max - min offsets)."""
    rows = parse_topic_status(small_mqadmin(small).run("topicStatus", "-t", topic).out)
    found: dict[str, int] = {}
    for row in rows:
        found[row.broker] = found.get(row.broker, 0) + row.max_offset - row.min_offset
    return found


def test_a_redrive_while_a_dlq_broker_hangs_names_it_needs_the_choice_and_ends_partial(
    cluster, redis, small, personas, settings, monkeypatch, django_capture_on_commit_callbacks, viewer_client
):
    from consumers.changes.guards import Actor, ChangeRefused
    from consumers.changes.models import State
    from consumers.changes.tasks import execute_change
    from consumers.changes.workflow import approve
    from consumers.dlq import redrive, runner
    from consumers.dlq.browse import Selection
    from consumers.rocketmq.codes import dlq_topic

    group, target = "G-pf-dlq", "T-pf-redriven"
    fill_two_brokers(small, group, target, {"broker-a": 30, "broker-b": 20})
    assert stored_in(small, dlq_topic(group)) == {"broker-a": 30, "broker-b": 20}  # the oracle, before
    assert poll_cluster(cluster).status == "ok"  # the console knows both brokers
    operator, approver = Actor(personas["operator"], "10.0.0.1"), Actor(personas["approver"], "10.0.0.2")
    monkeypatch.setattr("consumers.dlq.tasks.run_redrive.delay", lambda pk: None)  # the test runs the job
    small.brokers["broker-b"].process.signal(signal.SIGSTOP)
    try:
        plan = {"actor": operator, "cluster": cluster, "group": group, "selection": Selection(), "target": "topic",
                "target_topic": target, "rate": 1000}  # fmt: skip
        # a small job: the requester must make the choice, or nothing is planned
        settings.REDRIVE_APPROVAL_THRESHOLD = 1000
        with pytest.raises(ChangeRefused, match="could not be read on broker-b") as refused:
            redrive.plan_redrive(**plan)
        assert refused.value.status == 409 and not redrive.RedriveJob.objects.exists()
        # a large one: the approver must make it
        settings.REDRIVE_APPROVAL_THRESHOLD = 10
        job = redrive.plan_redrive(**plan, reason="replay what broker-a holds")
        assert job.total == 30 and set(job.bounds) == {"broker-a#0"}
        assert (
            [u["broker"] for u in job.untouched]
            == ["broker-b"]
            == [u["broker"] for u in job.change_request.plan["unreadable"]]
        )
        with pytest.raises(ChangeRefused, match="could not read broker-b"):
            approve(job.change_request, actor=approver)
        approve(job.change_request, actor=approver, accept_unreadable=True)
        with django_capture_on_commit_callbacks(execute=True):
            assert execute_change.run(job.change_request.pk) == f"redrive #{job.pk} queued"
        ended = runner.run_job(job.pk)
    finally:
        small.brokers["broker-b"].process.signal(signal.SIGCONT)
    assert (ended.state, ended.moved, ended.failed) == ("partial", 30, 0)
    request = ended.change_request
    request.refresh_from_db()
    assert request.state == State.PARTIAL and [u["broker"] for u in request.result["untouched"]] == ["broker-b"]
    assert request.events.filter(action="approve").get().details["left_unreadable"] == ["broker-b"]
    # on the brokers: broker-a's 30 were sent once; broker-b's 20 dead letters are where they were
    assert stored_in(small, target) == {"broker-a": 30}
    assert stored_in(small, dlq_topic(group)) == {"broker-a": 30, "broker-b": 20}
    page = viewer_client.get(f"/dlq/jobs/{job.pk}/").content.decode()
    assert 'id="job-state">partial<' in page and "Partial: the dead letters on 1 broker(s)" in page
    assert f"<li>broker-b: {escape(ended.untouched[0]['reason'])}</li>" in page  # why, as the plan read it
    change_page = viewer_client.get(f"/changes/{request.pk}/").content.decode()
    assert 'id="untouched"' in change_page and "broker-b" in change_page


def test_with_a_broker_killed_a_reset_and_a_redrive_name_it_end_partial_and_leave_it_as_it_was(
    cluster, redis, small, personas, settings
):
    """The issue's scenario: broker-b SIGKILLed (gone from the name server, known to the console).
    Oracle for "left as it was": broker-b's committed offsets and DLQ read after it returns."""
    from consumers.changes.guards import Actor, ChangeRefused
    from consumers.changes.models import State
    from consumers.changes.workflow import approve
    from consumers.dlq import redrive, runner
    from consumers.dlq.browse import Selection
    from consumers.resets import execute
    from consumers.resets.services import request_reset, undo
    from consumers.rocketmq.codes import dlq_topic

    settings.RESET_VERIFY_SECONDS = 3
    committed = {("broker-a", 0): 2, ("broker-a", 1): 2, ("broker-b", 0): 1, ("broker-b", 1): 1}
    commit(small, committed)
    wait(lambda: flushed(small, "broker-b", {0: 1, 1: 1}), 30, "broker-b flushed the committed offsets")
    group, target = "G-pf-killed-dlq", "T-pf-killed-redriven"
    fill_two_brokers(small, group, target, {"broker-a": 12, "broker-b": 8})
    assert poll_cluster(cluster).status == "ok"  # the console knows both brokers and the group's queues
    operator, approver = Actor(personas["operator"], "10.0.0.1"), Actor(personas["approver"], "10.0.0.2")
    small.kill_broker("broker-b")
    try:
        wait(lambda: "broker-b" not in run(_masters(small)), 60, "the name server drops broker-b")
        assert poll_cluster(cluster).status == "degraded"
        request = request_reset(
            actor=operator, cluster=cluster, group=GROUP, params={"strategy": "earliest"}, reason="broker-b died"
        )
        assert {(r["broker"], r["queue_id"]) for r in request.plan["rows"]} == {("broker-a", 0), ("broker-a", 1)}
        [unknown] = request.plan["unreadable"]
        assert (unknown["broker"], unknown["reason"]) == ("broker-b", "missing from the name server")
        assert unknown["since"] and unknown["queues"] == [f"{TOPIC}@broker-b#0", f"{TOPIC}@broker-b#1"]
        with pytest.raises(ChangeRefused, match="could not read broker-b"):
            approve(request, actor=approver)
        approve(request, actor=approver, accept_unreadable=True)
        reset = execute.execute_reset(request.pk)
        plan = {"actor": operator, "cluster": cluster, "group": group, "selection": Selection(), "target": "topic",
                "target_topic": target, "rate": 1000}  # fmt: skip
        with pytest.raises(ChangeRefused, match=r"broker-b \(missing from the name server\)"):
            redrive.plan_redrive(**plan)
        job = redrive.plan_redrive(**plan, accept_unreadable=True)
        assert job.total == 12 and [u["broker"] for u in job.untouched] == ["broker-b"]
        moved = runner.run_job(job.pk)
    finally:
        small.start_broker("broker-b")
        small.wait_registered({"broker-a", "broker-b"})
    assert reset.state == State.PARTIAL and [u["broker"] for u in reset.result["untouched"]] == ["broker-b"]
    assert (moved.state, moved.moved, moved.failed) == ("partial", 12, 0)
    # broker-a reset to its min offset (0), broker-b's offsets and dead letters as they were
    assert read_offsets(small) == {**committed, ("broker-a", 0): 0, ("broker-a", 1): 0}
    assert stored_in(small, dlq_topic(group)) == {"broker-a": 12, "broker-b": 8}
    assert stored_in(small, target) == {"broker-a": 12}
    back = undo(reset, actor=operator, reason="put broker-a back")
    approve(back, actor=approver)
    assert execute.execute_reset(back.pk).state == State.DONE
    assert read_offsets(small) == committed
