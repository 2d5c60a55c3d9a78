"""Offset resets against the real broker: request, approve, execute exactly once, verify (an
approval bound to the effect: test_effect_on_broker.py). Oracles: mqadmin consumerProgress, the
offsets the test committed itself, the producer's record of which message went to which queue
offset, and what the harness consumer receives."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

import pytest
from django.db import connection

from consumers import audit
from consumers.audit.models import AuditEvent
from consumers.changes.models import ChangeRequest, State
from consumers.changes.workflow import Actor, approve
from consumers.models import Cluster
from consumers.resets import execute
from consumers.resets.services import request_reset, undo
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import retry_topic
from consumers.rocketmq.models import MessageQueue
from devstack.mqadmin import parse_consumer_progress
from tests.conftest import run
from tests.support.scenarios import offline_group, wait_committed

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def mqadmin_offsets(mqadmin, group: str, topic: str) -> dict[str, int]:
    rows = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out).rows
    return {f"{r.topic}@{r.broker}#{r.queue_id}": r.consumer_offset for r in rows if r.topic == topic}


def approved_and_run(personas, cluster, group, params, reason="test") -> ChangeRequest:
    request = request_reset(
        actor=Actor(personas["operator"], "10.1.1.1"), cluster=cluster, group=group, params=params, reason=reason
    )
    approve(request, actor=Actor(personas["approver"], "10.1.1.2"))
    return execute.execute_reset(request.pk)


def test_offline_group_reset_to_a_time_lands_exactly_on_the_preview(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv
):
    topic, group = create_topic(names.topic("time")), names.group("time")
    first = traffic.produce(topic, 24).sent
    time.sleep(1.2)
    moment = int(time.time() * 1000)
    time.sleep(0.3)
    second = traffic.produce(topic, 24).sent
    ends = Counter((m.broker, m.queue_id) for m in first + second)
    offline_group(mqadmin, namesrv, group, {(topic, b, q): n for (b, q), n in ends.items()})  # all consumed

    done = approved_and_run(personas, cluster, group, {"strategy": "time", "timestamp_ms": moment})
    assert done.state == State.DONE, done.result
    planned = {r["label"]: r["target"] for r in done.plan["rows"]}
    # independent: the first message after the moment on each queue is the first of the second batch
    first_after = {
        f"{topic}@{b}#{q}": min(m.queue_offset for m in second if (m.broker, m.queue_id) == (b, q)) for b, q in ends
    }
    assert planned == first_after
    assert mqadmin_offsets(mqadmin, group, topic) == planned
    assert done.plan["totals"][topic]["reconsumed"] == len(second)
    assert done.result["replaced"] == {f"{topic}@{b}#{q}": n for (b, q), n in ends.items()}


def test_online_group_reset_to_earliest_redelivers_exactly_what_it_had_consumed(
    personas, cluster, traffic, names, create_topic, mqadmin, settings
):
    # The Java client pauses 10 s in its reset (MQClientInstance.resetOffset) and its 5 s offset
    # persister may commit its old position meanwhile: a watch shorter than 10 + 5 s can end
    # on that moment and rightly call the queue overwritten (the default watch is 30 s)
    settings.RESET_VERIFY_SECONDS = 17
    topic, group = create_topic(names.topic("early")), names.group("early")
    produced = traffic.produce(topic, 16).sent
    consumer = traffic.consume(group, topic)
    consumer.wait_acked(16)
    wait_committed(mqadmin, group, topic, diff=0)

    done = approved_and_run(personas, cluster, group, {"strategy": "earliest"})
    assert done.state == State.DONE, json.dumps(done.result["verification"])
    assert done.result["online"] and done.plan["online"] and done.result["watched_seconds"] >= 17
    assert all(check["ok"] for check in done.result["verification"].values())

    def twice(deliveries) -> bool:
        return Counter(e["msgId"] for e in deliveries) == Counter({m.msg_id: 2 for m in produced})

    consumer.wait_delivered(twice, timeout=90, what="every message delivered again, once")


def test_skip_exact_shift_copy_and_the_retry_queues_only_when_asked(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv
):
    topic = create_topic(names.topic("many"))
    sent = traffic.produce(topic, 40).sent
    ends = Counter((m.broker, m.queue_id) for m in sent)
    queues = sorted(ends)
    lagging, source = names.group("lag"), names.group("src")
    offline_group(mqadmin, namesrv, lagging, {(topic, b, q): 1 for b, q in queues})
    offline_group(mqadmin, namesrv, source, {(topic, b, q): i % 3 for i, (b, q) in enumerate(queues)})
    label = {bq: f"{topic}@{bq[0]}#{bq[1]}" for bq in queues}

    skip = approved_and_run(personas, cluster, lagging, {"strategy": "latest"})
    assert skip.state == State.DONE and skip.result["targets_used"] == {label[bq]: ends[bq] for bq in queues}
    assert mqadmin_offsets(mqadmin, lagging, topic) == {label[bq]: ends[bq] for bq in queues}

    exact = {label[queues[0]]: 2, label[queues[1]]: 0}
    approved_and_run(personas, cluster, lagging, {"strategy": "exact", "offsets": exact})
    expected = {label[bq]: ends[bq] for bq in queues} | exact
    assert mqadmin_offsets(mqadmin, lagging, topic) == expected

    shifted = approved_and_run(personas, cluster, lagging, {"strategy": "shift", "shift": -3})
    expected = {k: max(0, v - 3) for k, v in expected.items()}
    assert mqadmin_offsets(mqadmin, lagging, topic) == expected
    assert any(r["clamped"] for r in shifted.plan["rows"])  # 2 - 3 and 0 - 3 are below min 0

    approved_and_run(personas, cluster, lagging, {"strategy": "copy", "source_group": source})
    assert mqadmin_offsets(mqadmin, lagging, topic) == mqadmin_offsets(mqadmin, source, topic)

    without = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=lagging, params={"strategy": "earliest"}, reason="x"
    )
    with_retry = request_reset(
        actor=Actor(personas["operator"]),
        cluster=cluster,
        group=lagging,
        params={"strategy": "earliest", "include_retry": True},
        reason="x",
    )
    assert {r["topic"] for r in without.plan["rows"]} == {topic}
    assert {r["topic"] for r in with_retry.plan["rows"]} == {topic, retry_topic(lagging)}


def test_undo_puts_back_the_replaced_offsets_through_a_new_approval(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv
):
    topic, group = create_topic(names.topic("undo")), names.group("undo")
    ends = Counter((m.broker, m.queue_id) for m in traffic.produce(topic, 24).sent)
    before = {(topic, b, q): max(0, n - 1) for (b, q), n in ends.items()}
    offline_group(mqadmin, namesrv, group, before)
    done = approved_and_run(personas, cluster, group, {"strategy": "earliest"})
    assert set(mqadmin_offsets(mqadmin, group, topic).values()) == {0}
    again = undo(done, actor=Actor(personas["operator"]), reason="wrong group")
    assert again.state == State.PENDING and again.undo_of_id == done.pk and again.params["strategy"] == "exact"
    approve(again, actor=Actor(personas["approver"]))
    assert execute.execute_reset(again.pk).state == State.DONE
    assert mqadmin_offsets(mqadmin, group, topic) == {f"{t}@{b}#{q}": n for (t, b, q), n in before.items()}


def test_twice_delivered_and_racing_runs_reset_once(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv, broker_calls
):
    topic, group = create_topic(names.topic("once")), names.group("once")
    ends = Counter((m.broker, m.queue_id) for m in traffic.produce(topic, 16).sent)
    offline_group(mqadmin, namesrv, group, {(topic, b, q): n for (b, q), n in ends.items()})
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "earliest"}, reason="x"
    )
    approve(request, actor=Actor(personas["approver"]))
    broker_calls.clear()  # the set-up's own commits
    outcomes = []

    def worker():
        try:
            outcomes.append(execute.execute_reset(request.pk))
        except Exception as exc:  # reported by the assertion below
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o is None for o in outcomes) == [False, True], outcomes  # one ran, one found it taken
    from consumers.changes.tasks import execute_change

    assert execute_change.run(request.pk) == "another worker has it"  # a third, late delivery
    rows = len(request.plan["rows"])
    assert sum(broker_calls.values()) == rows  # one write per queue, once
    events = list(AuditEvent.objects.filter(change_request=request).values_list("action", flat=True))
    assert events.count("run") == 1 and events.count("result") == 1
    assert ChangeRequest.objects.get(pk=request.pk).state == State.DONE
    assert audit.verify_chain().ok


def test_a_worker_that_dies_mid_run_is_taken_over_and_the_result_is_true(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv, monkeypatch, settings
):
    topic, group = create_topic(names.topic("crash")), names.group("crash")
    ends = Counter((m.broker, m.queue_id) for m in traffic.produce(topic, 16).sent)
    offline_group(mqadmin, namesrv, group, {(topic, b, q): n for (b, q), n in ends.items()})
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "earliest"}, reason="x"
    )
    approve(request, actor=Actor(personas["approver"]))
    monkeypatch.setattr(execute, "BATCH", 3)
    real_apply, batches = execute._apply, []

    async def dies_after_one_batch(*args, **kwargs):
        if batches:
            raise KeyboardInterrupt("the worker was killed")  # not caught by the service
        batches.append(1)
        return await real_apply(*args, **kwargs)

    monkeypatch.setattr(execute, "_apply", dies_after_one_batch)
    with pytest.raises(KeyboardInterrupt):
        execute.execute_reset(request.pk)
    left = ChangeRequest.objects.get(pk=request.pk)
    assert left.state == State.RUNNING and len(left.result["applied"]) == 3  # what the dead worker recorded

    monkeypatch.setattr(execute, "_apply", real_apply)
    assert execute.execute_reset(request.pk) is None  # its heartbeat is fresh: nobody takes over yet
    settings.CHANGE_RUN_STALE_SECONDS = 0
    done = execute.execute_reset(request.pk)
    assert done.state == State.DONE and len(done.result["applied"]) == len(request.plan["rows"])
    assert set(mqadmin_offsets(mqadmin, group, topic).values()) == {0}
    actions = list(AuditEvent.objects.filter(change_request=request).values_list("action", flat=True))
    assert actions == ["request", "approve", "run", "resume", "result"]


@pytest.mark.parametrize(
    ("group_label", "params", "says"),
    [
        ("ghost", {"strategy": "earliest"}, "no consumer group"),
        ("real", {"strategy": "earliest", "topics": ["T-not-consumed"]}, "does not consume T-not-consumed"),
        ("real", {"strategy": "exact", "offsets": {"TOPIC@broker-a#0": 10**9}}, "beyond its max offset"),
        ("real", {"strategy": "time", "timestamp_ms": int(time.time() * 1000) + 3_600_000}, "in the future"),
        ("real", {"strategy": "shift", "shift": 0}, "non-zero"),
        ("real", {"strategy": "copy", "source_group": "G-nobody-here"}, "to copy offsets from"),
        ("real", {"strategy": "sideways"}, "body.params.strategy: must be one of time, earliest"),
        ("real", {"strategy": "time", "timestamp_ms": True}, "body.params.timestamp_ms: must be a whole number"),
    ],
)
def test_bad_input_is_refused_in_the_api_and_nothing_is_sent(
    client, personas, cluster, traffic, names, create_topic, mqadmin, namesrv, broker_calls, group_label, params, says
):
    topic, group = create_topic(names.topic("bad")), names.group("bad")
    traffic.produce(topic, 4)
    offline_group(mqadmin, namesrv, group, {(topic, "broker-a", 0): 1})
    broker_calls.clear()  # the set-up's own commits
    if "offsets" in params:
        params = {**params, "offsets": {f"{topic}@broker-a#0": 10**9}}
    client.force_login(personas["operator"])
    body = {"cluster": "local", "group": group if group_label == "real" else "G-ghost", "params": params, "reason": "x"}
    response = client.post("/api/changes/", body, content_type="application/json")
    assert response.status_code == 400 and says in response.json()["error"], response.json()
    assert not ChangeRequest.objects.exists() and sum(broker_calls.values()) == 0
    form = {"strategy": params["strategy"], "reason": "x", "topics": params.get("topics", [])}
    page = client.post(f"/groups/local/{body['group']}/reset/request/", form)
    assert page.status_code == 400 and not ChangeRequest.objects.exists()


def test_the_api_enforces_four_eyes_and_roles(
    client, personas, cluster, traffic, names, create_topic, mqadmin, namesrv
):
    topic, group = create_topic(names.topic("api")), names.group("api")
    traffic.produce(topic, 4)
    offline_group(mqadmin, namesrv, group, {(topic, "broker-a", 0): 1})
    client.force_login(personas["viewer"])
    body = {"cluster": "local", "group": group, "params": {"strategy": "latest"}, "reason": "skip"}
    assert client.post("/api/changes/", body, content_type="application/json").status_code == 403
    client.force_login(personas["admin"])
    created = client.post("/api/changes/", body, content_type="application/json")
    assert created.status_code == 201 and created.json()["state"] == "pending"
    pk = created.json()["id"]
    refused = client.post(f"/api/changes/{pk}/approve/", {}, content_type="application/json")
    assert refused.status_code == 403 and "four eyes" in refused.json()["error"]
    page = client.post(f"/changes/{pk}/decide/", {"action": "approve"})
    assert page.status_code == 403 and "four eyes" in page.content.decode()
    client.force_login(personas["approver"])
    assert client.post(f"/api/changes/{pk}/reject/", {}, content_type="application/json").status_code == 400
    rejected = client.post(f"/api/changes/{pk}/reject/", {"reason": "not now"}, content_type="application/json")
    assert rejected.status_code == 200 and rejected.json()["state"] == "rejected"
    assert [e["action"] for e in rejected.json()["events"]] == ["request", "reject"]


def test_an_old_position_committed_over_the_reset_is_caught_by_verification(
    personas, rmq_runtime, db, settings, tmp_path, monkeypatch
):
    """On a broker without server-side reset the offsets are plain commits, and a client that
    commits its old position after the reset silently undoes it: the verification says so."""
    from tests.conftest import SESSION_DIR
    from tests.support.scenarios import PREPARED_MESSAGES, prepared_cluster

    local = prepared_cluster(
        rmq_runtime,
        SESSION_DIR / "no-server-reset",
        topic="T-ow",
        group="G-ow",
        broker_names=("broker-a",),
        broker_config={"useServerSideResetOffset": "false"},
    )
    try:
        settings.RESET_VERIFY_SECONDS = 8
        cluster = Cluster.objects.create(name="ow", namesrv_addrs=local.namesrv_addr)
        request = request_reset(
            actor=Actor(personas["operator"]), cluster=cluster, group="G-ow", params={"strategy": "latest"}, reason="x"
        )
        approve(request, actor=Actor(personas["approver"]))
        real_verify = execute._verify

        def client_commits_its_old_position_first(*args, **kwargs):
            # right after the reset and before the verification reads: a client's periodic commit
            # of where it was before (a real write to the broker, as the client would send it)
            async def commit():
                async with AdminClient(local.namesrv_addr) as client:
                    for queue_id in (0, 1):
                        await client.actions.update_consumer_offset(
                            "G-ow", MessageQueue("T-ow", "broker-a", queue_id), 1
                        )

            run(commit())
            return real_verify(*args, **kwargs)

        monkeypatch.setattr(execute, "_verify", client_commits_its_old_position_first)
        done = execute.execute_reset(request.pk)
        assert done.state == State.PARTIAL, done.result
        notes = [c["note"] for c in done.result["verification"].values()]
        assert any(n.startswith("overwritten by") and "(1)" in n for n in notes), notes
        assert PREPARED_MESSAGES // 2 in {c["target"] for c in done.result["verification"].values()}
    finally:
        local.discard()


def test_group_page_links_and_the_reset_form_preview(
    viewer_client, personas, cluster, settled, redis, history_dir, mqadmin
):
    from consumers.live.poll import poll_cluster

    poll_cluster(cluster)
    group = settled.lagging.group
    page = viewer_client.get(f"/groups/local/{group}/").content.decode()
    assert f"/groups/local/{group}/reset/" in page and f"/changes/?cluster=local&amp;group={group}" in page
    fragment = viewer_client.get(f"/groups/local/{group}/reset/preview/?strategy=earliest").content.decode()
    theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
    reconsumed = sum(r.consumer_offset for r in theirs.rows if r.topic == settled.topic)
    assert f"{reconsumed} re-consumed" in fragment and "offline" in fragment
