"""A rate-limited redrive through a pause, a resume and a worker that dies, measured where the
rate matters: the target broker's store times. The rate is a ceiling at every moment (no
catch-up burst after the pause or the take-over), and the job's progress is what the target
holds (mqadmin topicStatus) whenever the job says where it is."""

from __future__ import annotations

import bisect
import threading

import pytest
from django.db import connection

from consumers.changes.guards import Actor
from consumers.dlq import redrive, runner
from consumers.dlq.browse import Selection
from consumers.dlq.models import RedriveJob
from devstack.mqadmin import parse_topic_status
from tests.dlq.test_dlq import fill_dlq, target_messages
from tests.dlq.test_redrive_on_broker import dies_on_the_second_record
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOTAL, RATE = 2000, 200


def on_target(mqadmin, topic: str) -> int:
    return sum(r.max_offset - r.min_offset for r in parse_topic_status(mqadmin.run("topicStatus", "-t", topic).out))


def busiest_second(stamps_ms: list[int]) -> int:
    """The most messages stored in any 1-second window (sliding, from each message's store time)."""
    return max(bisect.bisect_left(stamps_ms, t + 1000) - i for i, t in enumerate(stamps_ms))


def rate_while_sending(stamps_ms: list[int], idle_ms: int = 500) -> float:
    """Messages per second over the stretches the job was sending (gaps over `idle_ms` are the
    pause and the take-over: left out, as the issue measures it)."""
    messages = seconds = 0
    begin = 0
    for i in range(1, len(stamps_ms) + 1):
        if i == len(stamps_ms) or stamps_ms[i] - stamps_ms[i - 1] > idle_ms:
            messages += i - 1 - begin  # intervals inside the stretch
            seconds += (stamps_ms[i - 1] - stamps_ms[begin]) / 1000
            begin = i
    return messages / seconds


def test_the_rate_holds_on_the_broker_through_pause_resume_and_a_take_over(
    personas, cluster, mqadmin, namesrv, names, create_topic, monkeypatch, settings, pacers
):
    monkeypatch.setattr("consumers.dlq.tasks.run_redrive.delay", lambda pk: None)  # the test runs the worker
    monkeypatch.setattr(runner, "WINDOW", RATE)  # a window a second: pause acts within one
    settings.REDRIVE_APPROVAL_THRESHOLD = TOTAL
    group, target = names.group("paced"), create_topic(names.topic("paced-target"))
    fill_dlq(mqadmin, namesrv, group, TOTAL)
    actor = Actor(personas["operator"])
    job = redrive.plan_redrive(actor=actor, cluster=cluster, group=group, selection=Selection(), target="topic",
                               target_topic=target, rate=RATE)  # fmt: skip

    def work():
        try:
            runner.run_job(job.pk)
        except KeyboardInterrupt:
            pass  # the "killed" worker below
        finally:
            connection.close()

    # 1. run, then pause: the count stops where the broker stops
    worker = threading.Thread(target=work)
    worker.start()
    wait(lambda: RedriveJob.objects.get(pk=job.pk).moved >= 3 * RATE, 30, "three seconds of sends")
    redrive.pause(job, actor=actor)
    worker.join()
    paused = RedriveJob.objects.get(pk=job.pk)
    assert paused.state == "paused" and paused.moved == on_target(mqadmin, target)
    threading.Event().wait(3)  # three seconds paused: time the rate must not "save up"

    # 2. resume, and the worker dies between sending a window and recording it
    redrive.resume(paused, actor=actor)
    killed = dies_on_the_second_record(monkeypatch)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=60)
    assert len(killed.calls) == 2 and not worker.is_alive()
    dead = RedriveJob.objects.get(pk=job.pk)
    unrecorded = on_target(mqadmin, target) - dead.moved
    assert dead.state == "running" and unrecorded > 0  # sent, not yet counted: what a take-over must find

    # 3. taken over (its heartbeat is stale at once here): it finds those on the target, then sends the rest
    killed.restore()
    settings.CHANGE_RUN_STALE_SECONDS = 0
    done = runner.run_job(job.pk)
    assert (done.state, done.moved, done.failed, done.recovered) == ("done", TOTAL, 0, unrecorded)
    assert on_target(mqadmin, target) == TOTAL

    copies = target_messages(namesrv, target)
    born, stamps = sorted(m.born_timestamp for m in copies), sorted(m.store_timestamp for m in copies)
    # born: when the console built each send request, right after the pacer let its batch go.
    # Each batch is due a batch's time after the previous one was due, and goes at most half a
    # batch's time late without moving the schedule: at most RATE + 2 batches in any second (one
    # batch for the lateness forgiven and the window's edges, one for millisecond stamps).
    burst = pacers[0].batch
    assert len(born) == TOTAL and busiest_second(born) <= RATE + 2 * burst
    # stored: the broker's times add each send's latency, which the console does not govern; a
    # send slower than the next one lets them land closer together, by at most the spread of
    # the latencies measured here. A catch-up burst (the 3 s paused, saved up) would be 600 more.
    latency = sorted(m.store_timestamp - m.born_timestamp for m in copies)
    spread = latency[int(0.99 * len(latency))] - latency[0]
    allowance = RATE + 2 * burst + -(-spread * RATE // 1000)
    busiest, rate = busiest_second(stamps), rate_while_sending(stamps)
    print(f"\nbusiest second: born {busiest_second(born)}, stored {busiest} (ceiling {RATE} + {2 * burst}, "
          f"latency spread {spread} ms: {allowance}); {rate:.1f} msg/s while sending")  # fmt: skip
    assert busiest <= allowance
    # the pacers held sends back no longer than the rate needs for what they let go; the wall
    # clock's rate is the machine's (see test_redrive_on_broker's rate test): its floor only says nothing
    # stalled the job outside the pacers
    held, taken = sum(p.held for p in pacers), sum(p.taken for p in pacers)
    print(f"the pacers held {held:.2f} s for {taken} messages")
    assert held <= taken / RATE
    assert 0.5 * RATE <= rate <= 1.05 * RATE
