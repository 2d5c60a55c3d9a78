"""Dead-letter queues against the real broker: browse, export, a write-only DLQ, the API and the
overview (redrive jobs: test_redrive_on_broker.py). Oracles: the harness's record of what it
sent, dead-lettered and received, mqadmin topicStatus, and the target topic's own stored
messages."""

from __future__ import annotations

import asyncio
import base64
import csv
import datetime as dt
import io
import json
import re
import time
from collections import Counter

import pytest

from consumers.changes.workflow import Actor
from consumers.dlq import redrive, runner
from consumers.dlq.browse import Selection
from consumers.dlq.models import RedriveJob
from consumers.rocketmq import AdminClient, BrokerBusy, NoPermission
from consumers.rocketmq.codes import dlq_topic
from consumers.rocketmq.models import MessageQueue
from devstack.mqadmin import parse_topic_status
from tests.conftest import run

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def test_browse_counts_filters_and_renders_every_body_safely(client, personas, cluster, dead, mqadmin):
    group = dead["group"]
    status = parse_topic_status(mqadmin.run("topicStatus", "-t", dlq_topic(group)).out)
    client.force_login(personas["viewer"])
    page = client.get(f"/dlq/local/{group}/").content.decode()
    assert f'id="dlq-total">{sum(r.max_offset - r.min_offset for r in status)}<' in page
    shown = {line.split('"')[1] for line in page.split("data-msg-id=")[1:]}
    assert shown == set(dead["doomed"]) | set(dead["special"].values())
    narrowed = client.get(f"/dlq/local/{group}/?key=special-binary").content.decode()
    assert narrowed.count('class="dead"') == 1 and dead["special"]["binary"] in narrowed
    assert client.get(f"/dlq/local/{group}/?tag=html").content.decode().count('class="dead"') == 1
    assert client.get(f"/dlq/local/{group}/?since=2026-02-02T00:00&until=2026-01-01T00:00").status_code == 400
    # bodies are for operators: a viewer is not offered the body filter and is refused it
    assert 'name="body"' not in page and 'name="key"' in page
    assert client.get(f"/dlq/local/{group}/?key=special-binary&body=x").status_code == 403
    assert client.get(f"/api/dlq/local/{group}/messages/?body=x").status_code == 403
    # positions that do not exist are "not found", never a broker error or a 500
    for position in ("broker-a/99999/0", "no-such-broker/0/0", f"broker-a/0/{2**63}", f"broker-b/0/{2**63 - 1}"):
        missing = client.get(f"/dlq/local/{group}/{position}/")
        assert missing.status_code == 404 and b"Not found" in missing.content, position

    def message_page(msg_id: str, who: str) -> str:
        client.force_login(personas[who])
        listing = client.get(f"/dlq/local/{group}/?msg_id={msg_id}").content.decode()
        link = listing.split(f'data-msg-id="{msg_id}"')[1].split('href="')[1].split('"')[0]
        return client.get(link).content.decode()

    viewer_view = message_page(dead["special"]["script"], "viewer")
    assert "alert(1)" not in viewer_view and "Bodies are shown to operators" in viewer_view
    html = message_page(dead["special"]["script"], "operator")
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    by_body = client.get(f"/dlq/local/{group}/?body=alert(1)").content.decode()  # operator: allowed
    assert by_body.count('class="dead"') == 1 and dead["special"]["script"] in by_body
    assert "übergröße ✓" in html and "ORIGIN_MESSAGE_ID" in html
    assert 'id="body-hex">00 01 02 03' in message_page(dead["special"]["binary"], "operator")
    large = message_page(dead["special"]["large"], "operator")
    assert "-compressed (shown decompressed)" in large, large[:3000]
    assert "&quot;k&quot;: &quot;vvvv" in large  # pretty-printed JSON, escaped


def test_exports_carry_exactly_the_selection_with_bodies(client, personas, cluster, dead):
    client.force_login(personas["viewer"])
    assert client.get(f"/dlq/local/{dead['group']}/export.jsonl").status_code == 403
    client.force_login(personas["operator"])
    response = client.get(f"/dlq/local/{dead['group']}/export.jsonl?tag=bin")
    assert 'filename="dlq-' in response["Content-Disposition"] and "tag=bin" in response["Content-Disposition"]
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [r["msg_id"] for r in lines] == [dead["special"]["binary"]]
    assert base64.b64decode(lines[0]["body_base64"]) == bytes(range(256)) * 2
    everything = client.get(f"/dlq/local/{dead['group']}/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(everything.streaming_content).decode("utf-8-sig"))))
    assert {r["msg_id"] for r in rows} == set(dead["doomed"]) | set(dead["special"].values())
    sent = {m.msg_id: m.body for m in dead["doomed"].values()}
    assert all(base64.b64decode(r["body_base64"]) == sent[r["msg_id"]] for r in rows if r["msg_id"] in sent)


def test_a_write_only_dlq_is_browsed_exported_and_redriven_by_position(
    client, personas, cluster, mqadmin, namesrv, names, create_topic
):
    """perm 2 (brokers before 4.9.2): the broker refuses pulls, so the console reads by
    consume-queue position and commit-log offset, and never changes the topic's permission."""
    group, target = names.group("wo"), create_topic(names.topic("wo-target"))
    fill_dlq(mqadmin, namesrv, group, 300, perm=2)
    mq = run(_first_queue(namesrv, dlq_topic(group)))
    with pytest.raises(NoPermission):
        run(_pull(namesrv, mq))
    status = parse_topic_status(mqadmin.run("topicStatus", "-t", dlq_topic(group)).out)
    client.force_login(personas["operator"])
    page = client.get(f"/dlq/local/{group}/").content.decode()
    assert f'id="dlq-total">{sum(r.max_offset - r.min_offset for r in status)}<' in page
    for r in status:  # the max offset is the next one: the last message is at max - 1
        count, last = r.max_offset - r.min_offset, r.max_offset - 1
        assert f"{r.broker}#{r.queue_id}: {count}, offsets {r.min_offset}–{last}" in page
    assert 'id="write-only-note"' in page and "Make the DLQ readable" in page
    assert page.count('class="dead"') == 50  # a full first page, newest first
    assert client.get(f"/dlq/local/{group}/?key=k-7").content.decode().count('class="dead"') == 1
    exported = client.get(f"/dlq/local/{group}/export.jsonl")
    lines = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    assert sorted(base64.b64decode(r["body_base64"]) for r in lines) == sorted(f"dead {i}".encode() for i in range(300))
    job = redrive.plan_redrive(actor=Actor(personas["operator"]), cluster=cluster, group=group, selection=Selection(),
                               target="topic", target_topic=target, rate=5000)  # fmt: skip
    assert job.total == 300 and runner.run_job(job.pk).state == "done"
    stored = target_messages(namesrv, target)
    assert Counter(m.body for m in stored) == Counter(f"dead {i}".encode() for i in range(300))
    assert len({m.properties["REDRIVE_SOURCE"] for m in stored}) == 300
    route = run(_route(namesrv, dlq_topic(group)))
    assert {q.perm for q in route.queue_datas} == {2}  # still write-only: nothing was changed to read it


async def _route(namesrv, topic):
    async with AdminClient(namesrv) as client:
        return await client.topology.topic_route(topic, max_age=0)


async def _first_queue(namesrv, topic):
    route = await _route(namesrv, topic)
    return MessageQueue(topic, route.queue_datas[0].broker_name, 0)


async def _pull(namesrv, mq):
    async with AdminClient(namesrv) as client:
        return await client.messages.pull_range(mq, 0, 1)


def fill_dlq(mqadmin, namesrv, group: str, count: int, *, perm: int = 6) -> None:
    """A DLQ with `count` messages, written straight into %DLQ%<group> (as the broker would);
    perm 2 is the write-only DLQ of brokers before 4.9.2."""
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", dlq_topic(group), "-r", "1", "-w", "1", "-p", str(perm))

    async def fill():
        async with AdminClient(namesrv) as client:

            def one(i: int):
                properties = {"RETRY_TOPIC": "T-origin", "ORIGIN_MESSAGE_ID": f"o-{i}"}
                return client.actions.send_message(dlq_topic(group), f"dead {i}".encode(), keys=[f"k-{i}"],
                                                   properties=properties)  # fmt: skip

            for start in range(0, count, 200):
                todo = list(range(start, min(count, start + 200)))
                for _ in range(20):
                    results = await asyncio.gather(*(one(i) for i in todo), return_exceptions=True)
                    # a broker on a busy machine sheds load (SYSTEM_BUSY: nothing stored); others are errors
                    if errors := [r for r in results if isinstance(r, Exception) and not isinstance(r, BrokerBusy)]:
                        raise errors[0]
                    todo = [i for i, r in zip(todo, results, strict=True) if isinstance(r, BrokerBusy)]
                    if not todo:
                        break
                    await asyncio.sleep(0.2)
                assert not todo, f"{len(todo)} sends still refused as busy"

    run(fill())


def target_messages(namesrv, topic: str) -> list:
    async def read():
        async with AdminClient(namesrv) as client:
            route = await client.topology.topic_route(topic, max_age=0)
            found = []
            for mq in route.read_queues():
                found += await client.messages.pull_range(mq, 0, await client.progress.max_offset(mq))
            return found

    return run(read())


def test_the_api_browses_for_everyone_and_redrives_for_operators(client, personas, cluster, mqadmin, namesrv, names,
                                                                  monkeypatch):  # fmt: skip
    group = names.group("api")
    fill_dlq(mqadmin, namesrv, group, 7)
    monkeypatch.setattr("consumers.dlq.tasks.run_redrive.delay", lambda pk: None)
    client.force_login(personas["viewer"])
    listed = client.get(f"/api/dlq/local/{group}/messages/?key=k-3").json()
    assert (listed["total"], listed["dlq_total"]) == (1, 7) and [m["keys"] for m in listed["messages"]] == [["k-3"]]
    assert client.get(f"/api/dlq/local/{group}/messages/?keys=k-3").status_code == 400  # not a filter
    body = {"target": "topic", "target_topic": dlq_topic(group), "rate": 10, "selection": {"key": "k-3"}}
    refused = client.post(f"/api/dlq/local/{group}/redrive/", body, content_type="application/json")
    assert refused.status_code == 403 and "operator role" in refused.json()["error"]
    client.force_login(personas["operator"])
    created = client.post(f"/api/dlq/local/{group}/redrive/", body, content_type="application/json")
    assert created.status_code == 201 and created.json()["total"] == 1 and created.json()["state"] == "queued"
    pk = created.json()["id"]
    paused = client.post(f"/api/dlq/jobs/{pk}/pause/", {}, content_type="application/json")
    assert paused.json()["state"] == "paused"
    assert client.post(f"/api/dlq/jobs/{pk}/explode/", {}, content_type="application/json").status_code == 400
    assert client.get(f"/api/dlq/jobs/{pk}/").json()["moved"] == 0

    # one message, yet asked for an approver (as the MCP server's proposals are): it waits for one
    assert client.post(f"/api/dlq/jobs/{pk}/cancel/", {}, content_type="application/json").status_code == 200
    asked = {**body, "ask_approver": True}
    unexplained = client.post(f"/api/dlq/local/{group}/redrive/", asked, content_type="application/json")
    assert unexplained.status_code == 400 and "reason" in unexplained.json()["error"]
    waiting = client.post(f"/api/dlq/local/{group}/redrive/", {**asked, "reason": "the consumer is fixed"},
                          content_type="application/json").json()  # fmt: skip
    assert (waiting["total"], waiting["state"]) == (1, "awaiting-approval")
    assert RedriveJob.objects.get(pk=waiting["id"]).change_request.state == "pending"


def test_the_overview_lists_the_dlq_with_its_count_and_arrival_times(client, personas, cluster, dead, mqadmin):
    from consumers.live.poll import poll_cluster

    poll_cluster(cluster)  # the overview starts from the groups whose last poll saw dead letters
    client.force_login(personas["viewer"])
    page = client.get("/dlq/").content.decode()
    status = parse_topic_status(mqadmin.run("topicStatus", "-t", dlq_topic(dead["group"])).out)
    assert f'data-group="{dead["group"]}" data-count="{sum(r.max_offset - r.min_offset for r in status)}"' in page
    row = page.split(f'data-group="{dead["group"]}"')[1].split("</tr>")[0]
    shown = [
        dt.datetime.strptime(t, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
        for t in re.findall(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", row)
    ]
    # oldest and newest: both while this test's failing consumer was dead-lettering
    assert len(shown) == 2 and time.time() - 300 < shown[0] <= shown[1] <= time.time()
