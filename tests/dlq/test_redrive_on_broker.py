"""Redrive jobs against the real broker: back to the group, to the original topic, at a rate,
paused, resumed and cancelled, taken over after a worker died, refused, and the dead letters
that come back. Oracles: the harness's record of what it sent, dead-lettered and received,
mqadmin topicStatus, and the target topic's own stored messages."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from types import SimpleNamespace

import pytest
from django.db import connection

from consumers.changes.models import ChangeRequest
from consumers.changes.workflow import Actor, ChangeRefused, approve
from consumers.dlq import redrive, runner, selectors
from consumers.dlq.browse import Selection
from consumers.dlq.models import RedriveJob, RedrivenMessage
from consumers.models import Cluster
from consumers.rocketmq.codes import dlq_topic
from tests.dlq.test_dlq import fill_dlq, target_messages
from tests.support.scenarios import dlq_size, wait

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def test_redrive_back_to_the_group_reaches_only_that_group_once_each(
    client, personas, cluster, dead, traffic, monkeypatch
):
    dead["failing"].stop()
    healthy = traffic.consume(dead["group"], dead["topic"])  # the bug is fixed: the group consumes again
    queued = []
    monkeypatch.setattr("consumers.dlq.tasks.run_redrive.delay", queued.append)
    client.force_login(personas["operator"])
    response = client.post(f"/dlq/local/{dead['group']}/redrive/", {"target": "group", "rate": 50})
    assert response.status_code == 302
    job = RedriveJob.objects.get(group=dead["group"])
    assert queued == [job.pk] and job.total == dead["expected"]
    assert runner.run_job(job.pk).state == "done"  # what the worker does with the queued task
    # matched by key (the DLQ copy's ORIGIN_MESSAGE_ID is the original's offset id, not its client id)
    wanted = {m.key for m in dead["doomed"].values()} | {f"special-{k}" for k in dead["special"]}

    def received_once(deliveries) -> bool:
        redriven = Counter(e["key"] for e in deliveries if e.get("redriveJob") == str(job.pk))
        return set(redriven) == wanted and set(redriven.values()) == {1}

    healthy.wait_delivered(received_once, timeout=60, what="every dead letter redelivered once")
    time.sleep(2)
    assert not [e for e in dead["everyone"].deliveries if e.get("redriveJob")]  # the other group: nothing
    page = client.get(f"/dlq/local/{dead['group']}/").content.decode()
    assert page.count(f'job <a href="/dlq/jobs/{job.pk}/">#{job.pk}</a>') == dead["expected"]


def test_redrive_to_the_original_topic_reaches_every_subscriber(personas, cluster, dead, traffic):
    dead["failing"].stop()
    healthy = traffic.consume(dead["group"], dead["topic"])
    job = redrive.plan_redrive(
        actor=Actor(personas["operator"]), cluster=cluster, group=dead["group"],
        selection=Selection(tag="bin"), target="original", rate=100,
    )  # fmt: skip
    assert runner.run_job(job.pk).state == "done" and job.total == 1
    for consumer in (healthy, dead["everyone"]):
        consumer.wait_delivered(
            lambda ds: any(e.get("key") == "special-binary" and e.get("redriveJob") == str(job.pk) for e in ds),
            timeout=60,
        )


def dies_on_the_second_record(monkeypatch) -> SimpleNamespace:
    """The worker "dies" (KeyboardInterrupt, which the runner does not catch) after sending its
    second window and before recording it. `calls`: the sizes of the windows it came to record;
    `restore()`: the next worker records normally."""
    real, calls = runner.record_sent, []

    def record(job, source, sent, at):
        calls.append(len(sent))
        if len(calls) == 2:
            raise KeyboardInterrupt("killed between sending and recording")
        return real(job, source, sent, at)

    monkeypatch.setattr(runner, "record_sent", record)
    return SimpleNamespace(calls=calls, restore=lambda: monkeypatch.setattr(runner, "record_sent", real))


def test_a_rate_limited_job_keeps_its_rate(
    personas, cluster, mqadmin, namesrv, names, create_topic, monkeypatch, pacers, django_capture_on_commit_callbacks
):
    group, target = names.group("rate"), create_topic(names.topic("rate-target"))
    fill_dlq(mqadmin, namesrv, group, 2000)
    job = redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group, selection=Selection(),
                               target="topic", target_topic=target, rate=200, reason="load test leftovers")  # fmt: skip
    approve(job.change_request, actor=Actor(personas["approver"]))  # 2,000 > 1,000: it needed an approver
    from consumers.changes.tasks import execute_change
    from consumers.dlq.tasks import run_redrive

    queued = []
    monkeypatch.setattr(run_redrive, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        # the approval's task only queues the job's own task (REDRIVE_TIME_LIMIT, not the change's)
        assert execute_change.run(job.change_request.pk) == f"redrive #{job.pk} queued"
    assert queued == [job.pk] and ChangeRequest.objects.get(pk=job.change_request.pk).state == "running"
    assert run_redrive.run(job.pk) == "done"  # what the worker does with it
    stored = sorted(m.store_timestamp for m in target_messages(namesrv, target))
    assert len(stored) == 2000
    rate = (len(stored) - 1) / ((stored[-1] - stored[0]) / 1000)
    (pacer,) = pacers
    ideal = (pacer.taken - pacer.batch) / 200  # the first batch goes at once, each later one a batch's time on
    print(f"\nredrive rate {rate:.1f} msg/s for 200 asked; the pacer held {pacer.held:.2f} s of {ideal:.2f}")
    # the rate is a ceiling (a catch-up burst would break it), and the pacer holds sends back no
    # longer than the rate needs. How close the wall clock comes to 200 depends on the machine:
    # 198 idle here, 190 with four busy loops beside it, 166 on a CI machine at 100 % before
    # late wake-ups were forgiven; the floor only says the job was not stalled outside the pacer.
    assert rate <= 210 and pacer.held <= ideal
    assert rate >= 100
    assert ChangeRequest.objects.get(pk=job.change_request.pk).state == "done"


def test_pause_resume_and_cancel_keep_the_count_exact(
    personas, cluster, mqadmin, namesrv, names, create_topic, monkeypatch
):
    monkeypatch.setattr("consumers.dlq.tasks.run_redrive.delay", lambda pk: None)  # the test runs the worker
    monkeypatch.setattr(runner, "WINDOW", 32)  # controls act between windows: small ones act fast
    group, target = names.group("ctl"), create_topic(names.topic("ctl-target"))
    fill_dlq(mqadmin, namesrv, group, 600)
    actor = Actor(personas["operator"])
    job = redrive.plan_redrive(actor=actor, cluster=cluster, group=group, selection=Selection(), target="topic",
                               target_topic=target, rate=100)  # fmt: skip
    worker = threading.Thread(target=lambda: (runner.run_job(job.pk), connection.close()))
    worker.start()
    wait(lambda: RedriveJob.objects.get(pk=job.pk).moved > 0, 30, "the job moves")
    redrive.pause(job, actor=actor)
    at_pause = RedriveJob.objects.get(pk=job.pk)
    worker.join()
    paused = RedriveJob.objects.get(pk=job.pk)
    assert paused.state == "paused" and paused.shown_state == "paused" and 0 < paused.moved < 600
    assert paused.run_token == ""  # the worker let go once the window in flight was recorded
    if paused.moved > at_pause.moved:  # a window was still going out: the page said so
        assert at_pause.shown_state == "pausing", (at_pause.moved, paused.moved)
    assert len(target_messages(namesrv, target)) == paused.moved
    redrive.resume(paused, actor=actor)
    worker = threading.Thread(target=lambda: (runner.run_job(job.pk), connection.close()))
    worker.start()
    wait(lambda: RedriveJob.objects.get(pk=job.pk).moved > paused.moved, 30, "the job moves again")
    redrive.cancel(job, actor=actor)
    worker.join()
    cancelled = RedriveJob.objects.get(pk=job.pk)
    assert cancelled.state == "cancelled" and paused.moved < cancelled.moved < 600
    time.sleep(1)
    assert len(target_messages(namesrv, target)) == cancelled.moved == RedrivenMessage.objects.filter(job=job).count()


def killed_after_its_second_window(personas, cluster, mqadmin, namesrv, names, create_topic, monkeypatch, label):
    """A 600-message job in windows of 256 whose worker died after sending the second window and
    before recording it; the next run records normally. Returns the job and its target topic."""
    monkeypatch.setattr(runner, "WINDOW", 256)  # 600 messages: three windows
    group, target = names.group(label), create_topic(names.topic(f"{label}-target"))
    fill_dlq(mqadmin, namesrv, group, 600)
    job = redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group, selection=Selection(),
                               target="topic", target_topic=target, rate=5000)  # fmt: skip
    killed = dies_on_the_second_record(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        runner.run_job(job.pk)
    killed.restore()
    return job, target


def test_a_worker_killed_after_sending_is_taken_over_without_resending(
    personas, cluster, mqadmin, namesrv, names, create_topic, monkeypatch, settings
):
    job, target = killed_after_its_second_window(personas, cluster, mqadmin, namesrv, names, create_topic,
                                                 monkeypatch, "kill")  # fmt: skip
    assert RedrivenMessage.objects.filter(job=job).count() == runner.WINDOW  # the second went out unrecorded
    unrecorded = len(target_messages(namesrv, target)) - runner.WINDOW
    settings.CHANGE_RUN_STALE_SECONDS = 0
    done = runner.run_job(job.pk)
    assert done.state == "done" and done.moved == 600 and done.recovered == unrecorded > 0  # found, not resent
    stored = target_messages(namesrv, target)
    sources = Counter(m.properties["REDRIVE_SOURCE"] for m in stored)
    assert len(stored) == 600 and set(sources.values()) == {1}  # none lost, none sent twice


def test_a_take_over_that_cannot_ask_every_broker_sends_nothing_again(
    personas, cluster, mqadmin, namesrv, names, create_topic, monkeypatch, settings
):
    """Unknown is not "not there": with a broker the console knows missing from the name server,
    a copy sent before the crash could be stored there, so the take-over sends nothing again."""
    from django.utils import timezone

    from consumers.models import KnownBroker

    job, target = killed_after_its_second_window(personas, cluster, mqadmin, namesrv, names, create_topic,
                                                 monkeypatch, "blind")  # fmt: skip
    stored = len(target_messages(namesrv, target))
    now = timezone.now()
    KnownBroker.objects.create(cluster=cluster, name="broker-z", address="127.0.0.1:1", first_seen=now,
                               last_seen=now, missing_since=now)  # fmt: skip
    settings.CHANGE_RUN_STALE_SECONDS = 0
    ended = runner.run_job(job.pk)
    assert ended.state == "failed" and "broker-z is missing from the name server" in ended.failures[-1]["error"]
    assert len(target_messages(namesrv, target)) == stored > ended.moved  # nothing was sent again


def test_bad_redrives_are_refused_and_send_nothing(client, personas, cluster, mqadmin, namesrv, names):
    group = names.group("bad")
    fill_dlq(mqadmin, namesrv, group, 5)
    client.force_login(personas["viewer"])
    assert client.post(f"/dlq/local/{group}/redrive/", {"target": "group", "rate": 10}).status_code == 403
    client.force_login(personas["operator"])
    for form, says in [
        ({"target": "group", "rate": 0}, "must be between 1 and 20000"),
        ({"target": "group", "rate": 10**7}, "must be between 1 and 20000"),
        ({"target": "topic", "target_topic": "T-nowhere", "rate": 10}, "does not exist"),
        ({"target": "sideways", "rate": 10}, "valid choice"),
        ({"target": "topic", "target_topic": dlq_topic(group), "rate": 10, "key": "nope"}, "no message in the DLQ"),
    ]:
        response = client.post(f"/dlq/local/{group}/redrive/", form)
        assert response.status_code == 400 and says in response.content.decode(), (form, response.content[:300])
    assert not RedriveJob.objects.exists()
    job = redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group, selection=Selection(),
                               target="topic", target_topic=dlq_topic(group), rate=10)  # fmt: skip
    with pytest.raises(ChangeRefused, match="already active") as second:
        redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group,
                             selection=Selection(), target="topic", target_topic=dlq_topic(group), rate=10)  # fmt: skip
    assert second.value.status == 409 and RedriveJob.objects.count() == 1 == len([job])
    Cluster.objects.filter(pk=cluster.pk).update(read_only=True)
    cluster.refresh_from_db()
    redrive.cancel(job, actor=Actor(personas["operator"]))
    with pytest.raises(ChangeRefused, match="read-only"):
        redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group,
                             selection=Selection(), target="group", rate=10)  # fmt: skip


def test_dead_letters_that_come_back_after_a_redrive_keep_their_story(
    client, personas, cluster, dead, mqadmin, monkeypatch
):
    """Redriven back to a group that still fails: the copies return to the DLQ under new ids;
    each says which job it came back after and the id it had, and is found by either."""
    group, expected = dead["group"], dead["expected"]
    before = {r["msg_id"] for r in selectors.page(cluster, group, Selection(), None)[1].rows}
    job = redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group, selection=Selection(),
                               target="group", rate=100)  # fmt: skip
    assert runner.run_job(job.pk).state == "done"
    wait(lambda: dlq_size(mqadmin, group) == 2 * expected, 90, "the copies failed again and came back")
    client.force_login(personas["viewer"])
    listed = client.get(f"/api/dlq/local/{group}/messages/?job={job.pk}").json()
    back = listed["messages"]
    assert len(back) == expected and {r["came_back_after_job"] for r in back} == {job.pk}
    assert (listed["total"], listed["dlq_total"]) == (expected, 2 * expected)  # the filter's, not the DLQ's
    assert {r["redriven_from_id"] for r in back} == before  # each names the id it had in the DLQ
    one = sorted(before)[0]
    found = client.get(f"/api/dlq/local/{group}/messages/?msg_id={one}").json()["messages"]
    assert sorted(r["came_back_after_job"] for r in found if r["came_back_after_job"]) == [job.pk] and len(found) == 2
    page = client.get(f"/dlq/local/{group}/?job={job.pk}").content.decode()
    assert page.count(f'came back after job <a href="/dlq/jobs/{job.pk}/">#{job.pk}</a>') == expected
    # the job page counts them (read from the DLQ after its selection's end), loaded after the page
    job_page = client.get(f"/dlq/jobs/{job.pk}/").content.decode()
    assert f'hx-get="/dlq/jobs/{job.pk}/came-back/"' in job_page
    counted = client.get(f"/dlq/jobs/{job.pk}/came-back/").content.decode()
    assert f'<span id="came-back-count">{expected} came back</span>' in counted
    monkeypatch.setattr(selectors, "CAME_BACK_SCAN_LIMIT", 1)  # a DLQ too large to read whole: a lower bound
    counted = client.get(f"/dlq/jobs/{job.pk}/came-back/").content.decode()
    assert re.search(
        r"at least [01] came back \(read the first 1 dead letters since the job; \d+ newer not read\)", counted
    )
