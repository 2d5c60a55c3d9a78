"""The clients of a group as they see themselves, on the real cluster with the Java harness:
three classic clients each blocked on a message in the harness's listener. Their running info
(versions, threads, the queues each holds), and one capture of their stacks that finds the
three blocked consume threads in the same method on 3 of 3 clients."""

from __future__ import annotations

import time

import pytest

from consumers.alerts import services as alert_services
from consumers.alerts.models import Alert, AlertRule
from consumers.audit.models import AuditEvent
from consumers.clients import services
from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker]

BLOCKED_IN = "rmqconsole.harness.Scenario.awaitUninterruptibly"
LOCKED_IN = "rmqconsole.harness.Scenario.reserveUnderLock"  # the "locked" mode: one holds it, the others wait


def test_three_blocked_clients_are_read_and_their_stacks_clustered(
    db, client, personas, namesrv, names, create_topic, traffic, redis, history_dir, settings
):
    settings.HEALTH_STALL_SECONDS = 2  # STALLED after two polls a few seconds apart
    topic, group = create_topic(names.topic("stuck"), queues=2), names.group("stuck")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    runs = [traffic.consume(group, topic, mode="stalled", threads=2, instanceName=f"c{i}") for i in range(3)]
    traffic.produce(topic, 40)
    # each client holds one message in its listener (the stalled mode blocks on the first it gets)
    wait(lambda: all(any(d["result"] == "held" for d in r.deliveries) for r in runs), 90, "three clients blocked")

    client.force_login(personas["viewer"])
    page = client.get(f"/groups/local/{group}/clients/")
    html = page.content.decode()
    assert page.status_code == 200
    ids = sorted(r.client_id for r in runs)
    assert sorted(html.count(f'data-client="{c}"') for c in ids) == [1, 1, 1]
    # the harness's client library version, as the client reports it
    assert html.count("V5_3_") >= 3 or html.count("5.3.") >= 3, html[html.index('id="clients"') :][:2000]

    one = client.get(f"/groups/local/{group}/clients/{ids[0]}/").content.decode()
    assert 'id="thread-pool">2</b>' in one  # threads=2: the consume executor's core size
    assert 'id="process-queues"' in one and f"{topic}@broker-" in one
    assert client.get(f"/groups/local/{group}/clients/nobody@1/").status_code == 200  # named with why
    assert "no broker knows this client" in client.get(f"/groups/local/{group}/clients/nobody@1/").content.decode()

    # a viewer may not capture; an operator may, once every few seconds
    assert client.post(f"/groups/local/{group}/clients/stacks/").status_code == 403
    client.force_login(personas["operator"])
    captured = client.post(f"/groups/local/{group}/clients/stacks/")
    html = captured.content.decode()
    assert captured.status_code == 200, html
    first = html[html.index('id="stack-clusters"') :].split("</li>")[0]
    # the oracle: the deliveries each client's listener reported holding (one blocked thread each)
    held = sum(1 for r in runs for d in r.deliveries if d["result"] == "held")
    print(f"\nthe harness holds {held} deliveries; the capture says: {first.split('>', 2)[-1][:160]}")
    assert f"{held} consume threads on 3 of 3 client(s), WAITING, in" in first and BLOCKED_IN in first, first
    # the harness runs every consumer in one JVM: one process, each thread counted once
    assert "in 1 process(es)." in html[html.index('id="stacks-summary"') :].split("</p>")[0]
    assert client.post(f"/groups/local/{group}/clients/stacks/").status_code == 429
    event = AuditEvent.objects.get(action="capture_stacks")
    assert (event.username, event.group, event.details) == ("operator", group, {"clients": 3, "answered": 3})

    # a second capture once the group's slot is free: the blocked threads did not move
    again = []
    wait(lambda: again.append(client.post(f"/groups/local/{group}/clients/stacks/")) or again[-1].status_code == 200,
         30, "a second capture")  # fmt: skip
    html = again[-1].content.decode()
    stuck = html[html.index('id="stuck-threads"') :].split("</ul>")[0]
    assert stuck.count("<li data-thread=") == held and BLOCKED_IN in stuck, stuck

    # an alert rule on STALLED that captures stacks as it fires
    rule = AlertRule.objects.create(name="stalled", condition="state", states=["STALLED"], for_seconds=0,
                                    group_pattern=group, capture_stacks=True)  # fmt: skip
    # the group STALLED: its health shows where the latest capture found the threads, to operators
    wait(lambda: _polled_state(redis, cluster, group) == "STALLED", 30, "the group STALLED")
    fired = Alert.objects.get(rule=rule, subject=group, state="firing")
    # what the alert's task does (queued as it fired): once the group's capture slot is free
    wait(lambda: alert_services.capture_on_alert(fired.pk) == "captured", 30, "the alert's capture")
    newest = services.captures(redis, cluster, group, now=time.time())[0]
    assert newest["by"] == "alert stalled" and newest["busy"] == held, newest
    assert BLOCKED_IN in newest["clusters"][0]["frame"], newest["clusters"][0]
    event = AuditEvent.objects.filter(action="capture_stacks").latest("pk")
    assert event.username == "system" and event.details == {"clients": 3, "answered": 3, "alert": fired.pk,
                                                            "rule": "stalled"}  # fmt: skip
    page = client.get(f"/groups/local/{group}/").content.decode()
    assert 'id="stack-evidence"' in page, page[page.index('class="card health"') :][:1500]
    evidence = page[page.index('id="stack-evidence"') :].split("</p>")[0]
    assert f"{held} consume thread(s), on 3 of 3 client(s), in" in evidence and BLOCKED_IN in evidence, evidence
    client.force_login(personas["viewer"])
    assert 'id="stack-evidence"' not in client.get(f"/groups/local/{group}/").content.decode()


def _polled_state(redis, cluster, group) -> str | None:
    poll_cluster(cluster)
    return (snapshots.read_details(redis, cluster.pk).get(group).health or {}).get("state")


def test_consume_threads_waiting_for_one_lock_are_shown_blocked_behind_its_holder(
    db, client, personas, namesrv, names, create_topic, traffic, redis, history_dir
):
    topic, group = create_topic(names.topic("locked"), queues=4), names.group("locked")
    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    run = traffic.consume(group, topic, mode="locked", threads=4)
    traffic.produce(topic, 40)
    # the oracle: the harness's own record of its four consume threads entering the lock
    wait(lambda: sum(d["result"] == "locked" for d in run.deliveries) >= 4, 60, "four listeners at the lock")
    client.force_login(personas["operator"])
    # one client's capture, from its own page
    captured = client.post(f"/groups/local/{group}/clients/{run.client_id}/stacks/")
    html = captured.content.decode()
    assert captured.status_code == 200 and 'id="process-queues"' in html, html[:3000]
    found = html[html.index('id="stack-clusters"') :].split("</ul>")[0].split("<li")[1:]
    blocked = next(li for li in found if "BLOCKED" in li)
    holder = next(li for li in found if "WAITING" in li)
    assert "3 consume threads on 1 of 1 client(s), BLOCKED, in" in blocked and f"{LOCKED_IN}(" in blocked, found
    assert "1 consume thread on 1 of 1 client(s), WAITING, in" in holder, found
    assert f"{BLOCKED_IN}(" in holder and f'← <span class="mono">{LOCKED_IN}(' in holder, holder
    event = AuditEvent.objects.get(action="capture_stacks", group=group)
    assert event.details == {"clients": 1, "answered": 1, "client": run.client_id}
    assert client.post(f"/groups/local/{group}/clients/stacks/").status_code == 429  # the group's one slot
    run.release()
