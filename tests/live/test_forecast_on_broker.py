"""The drain forecast on the real cluster, with the Java harness's clients: production at 50
msg/s against consumption near 30 is "not at this rate" and growing within 10 polls; with
consumption raised to near 150, the forecast made then is within 40 % of the time the lag
really took to reach the floor (both printed). 40 %, not less: the forecast assumes the rate it
measured goes on, and on two cores shared with the other worker's tests the harness consumer's
rate moved by a third when a heavy test beside it ended (84 s forecast, 61 s taken, once in
about a dozen full runs; alone it is within 10 %)."""

from __future__ import annotations

import time

import pytest

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker]

POLL_SPACING = 3.0  # seconds between polls: the forecast is judged on their times
BACKLOG = 10_000  # what the raised consumption drains (at about 100/s net: over a minute and a half)
FLOOR = 100  # the lag the group reaches at best: offsets are committed once a second at 50/s


def test_a_group_not_keeping_up_then_catching_up_is_forecast_as_it_happens(
    db, namesrv, names, create_topic, traffic, redis, history_dir
):
    topic, group = create_topic(names.topic("drain"), queues=2), names.group("drain")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)

    def poll():
        poll_cluster(cluster)
        return snapshots.read_details(redis, cluster.pk)[group]

    def poll_until(done, polls: int):
        """Polls POLL_SPACING apart until `done(document)`, at most `polls`: the last document."""
        for _ in range(polls):
            time.sleep(POLL_SPACING)
            doc = poll()
            if done(doc):
                break
        return doc

    traffic.produce(topic, BACKLOG, quiet=True, timeout=180)
    producer = traffic.produce(topic, -1, rate=50, quiet=True, wait=False)
    try:
        slow = traffic.consume(group, topic, threads=1, sleepMs=33, quiet=True)
        # from the first poll that sees all 4 queues committed, three polls
        wait(lambda: sum(1 for q in poll().queues if not q.retry and q.consumer) == 4, 90, "4 queues committed")
        # "growing" once the fitted slope is clear of its own spread: the committed offsets move in
        # steps (the client commits every 5 s), so on loaded cores three polls were once too few
        # to tell it from "steady" (trend steady at 6-7/s consumed against 12.4/s produced per queue)
        doc = poll_until(lambda doc: doc.drain["trend"] == "growing", 10)
        print(f"\nconsuming near 30/s against 50/s: {doc.drain}")
        assert (doc.drain["state"], doc.drain["trend"]) == ("NOT_DRAINING", "growing"), doc.drain_queues

        slow.stop()
        raised = time.monotonic()
        traffic.consume(group, topic, threads=5, sleepMs=33, quiet=True)
        # the forecast an operator reads once it has settled: judged on the raised rate alone (its
        # stretch cut after the raise: the slow consumer's polls, its stop and the new one's start
        # left out), 8 polls on, and within 10 % of the poll before (a consumer that took its queues
        # one by one under load shows a rate still climbing before that)
        made, before = None, None
        while made is None:
            time.sleep(POLL_SPACING)
            doc, now = poll(), time.monotonic()
            # the queues that decide: one caught up (a lag of what is in flight, keeping pace) is
            # judged over however long it kept pace, and says 0 s whatever the rate was before
            judged = max([q["judged_seconds"] for q in doc.drain_queues if not q.get("caught_up")] or [0])
            settled = before is not None and doc.drain["seconds"] == pytest.approx(before, rel=0.1)
            # each poll printed (shown when the test fails): per queue its lag, judged span, points, seconds
            queues = " ".join(
                f"[{q['lag']} {q['judged_seconds']} {q['points']} {q['seconds']}]" for q in doc.drain_queues
            )
            print(f"{now - raised:5.0f} s: {doc.drain['state']} {doc.drain['seconds']} at lag {doc.lag}: {queues}")
            # it may reach back 3 polls before the raise: a queue whose stretch began just before it
            # (its first commit) has too few slow polls for a cut to tell from the commit steps
            # (once in CI: 8 s of them in 129 s judged, never cut, and no forecast was taken)
            recent = judged < now - raised + 3 * POLL_SPACING
            # and the queue that decides judged over 8 polls or more: once in CI it had 7, its rate
            # still climbing as its consumer took up (forecast 77 s, the lag took 54)
            deciding = [q["points"] for q in doc.drain_queues if q["queue"] == doc.drain["queue"]]
            recent = recent and deciding and deciding[0] >= 8
            if now - raised > 8 * POLL_SPACING and doc.drain["state"] == "DRAINING" and recent:
                if settled:
                    made = (now, doc.drain, doc.lag)
                    print(f"judged over the last {judged:.0f} s of polls, {now - raised:.0f} s after the raise")
                before = doc.drain["seconds"]
            assert now - raised < 120, f"no settled forecast on the raised rate alone: {doc.drain} {doc.drain_queues}"
        at, forecast, lag = made
        while doc.lag is None or doc.lag > FLOOR:
            time.sleep(POLL_SPACING / 3)
            doc = poll()
            assert time.monotonic() - at < 4 * forecast["seconds"] + 60, f"not drained: lag {doc.lag}"
        took = time.monotonic() - at
        print(f"forecast {forecast['seconds']:.0f} s (band {forecast['low']}–{forecast['high']}) at lag {lag}; "
              f"the lag reached {doc.lag} after {took:.0f} s")  # fmt: skip
        assert forecast["seconds"] == pytest.approx(took, rel=0.4)

        # drained, still fed at 50/s: the queues' lag comes and goes (what is in flight, none at
        # some polls), and the group reads caught up, not "not enough history" (as it once did)
        doc = poll_until(lambda doc: doc.drain["state"] == "DRAINED", 20)
        print(f"caught up: {doc.drain} {doc.drain_queues}")
        assert (doc.drain["state"], doc.drain["caught_up"]) == ("DRAINED", True), doc.drain_queues
    finally:
        producer.stop()
