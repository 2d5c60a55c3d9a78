"""Find and track on the real cluster, with mqadmin as the oracle: messages sent with keys and
tags by the Java client; one group consumed everything, one consumed part (the rest behind
the message it holds), one takes only TagB. Our find by offset id, by client id and by key
equals queryMsgById, queryMsgByUniqueKey and queryMsgByKey; our track says consumed, not yet
and filtered out where mqadmin's message track says CONSUMED, NOT_CONSUME_YET and
CONSUMED_BUT_FILTERED, with the committed offsets consumerProgress shows. A second test
follows dead letters through their retry copies into the DLQ (the session's settled groups)."""

from __future__ import annotations

import re
import time

import pytest

from consumers.messages import lookup
from consumers.messages.track import track
from consumers.models import Cluster
from consumers.rocketmq import AdminClient
from devstack.mqadmin import parse_consumer_progress, parse_key_query, parse_message, parse_message_tracks
from tests.conftest import run
from tests.support.scenarios import wait_committed

pytestmark = pytest.mark.broker

MQADMIN_VERDICTS = {"CONSUMED": "consumed", "NOT_CONSUME_YET": "not_yet", "CONSUMED_BUT_FILTERED": "filtered"}


def _ours(namesrv: str, topic: str, sent) -> dict:
    async def read():
        async with AdminClient(namesrv) as client:
            started = time.monotonic()
            by_offset = await lookup.find_by_id(client, sent.offset_msg_id)
            by_client_id = await lookup.find_by_id(client, sent.msg_id, topic)
            by_key = await lookup.find_by_key(client, topic, sent.key)
            at = await lookup.find_at(client, topic, sent.broker, sent.queue_id, sent.queue_offset)
            found = time.monotonic()
            tracking = await track(client, by_offset.messages[0])
            return {"by_offset": by_offset, "by_client_id": by_client_id, "by_key": by_key, "at": at,
                    "tracking": tracking, "find_s": found - started, "track_s": time.monotonic() - found}  # fmt: skip

    return run(read())


def _same_message(printed: dict, found, topic: str) -> None:
    m = found.message
    assert printed.get("OffsetID", m.offset_msg_id) == m.offset_msg_id  # queryMsgByUniqueKey prints none
    assert (printed["Topic"], printed["Tags"], printed["Keys"]) == (topic, f"[{m.tags}]", f"[{' '.join(m.keys)}]")
    assert (int(printed["Queue ID"]), int(printed["Queue Offset"])) == (m.queue_id, m.queue_offset)
    assert int(printed["CommitLog Offset"]) == m.physical_offset
    assert (printed["Born Host"], printed["Store Host"]) == (m.born_host, m.store_host)
    assert int(printed["Reconsume Times"]) == m.reconsume_times and int(printed["System Flag"]) == m.sys_flag
    assert f"UNIQ_KEY={m.properties['UNIQ_KEY']}" in printed["Properties"]


def test_find_and_track_agree_with_mqadmin(traffic, names, create_topic, mqadmin, namesrv, client, personas, redis):
    topic = create_topic(names.topic("find"), queues=2)  # 2 queues on each of the 2 brokers
    begin = int(time.time() * 1000) - 1000
    sent = traffic.produce(topic, 24, tags=["TagA", "TagB"], keyPrefix=f"{topic}-order-").sent
    end = int(time.time() * 1000) + 1000
    everything = traffic.consume(names.group("all"), topic)
    tag_b = traffic.consume(names.group("tagb"), topic, subscription="TagB")
    part = traffic.consume(names.group("part"), topic, mode="lagging", stopAfter=10)
    everything.wait_acked(24)
    tag_b.wait_acked(12)
    part.wait_acked(10)
    wait_committed(mqadmin, everything.group, topic, diff=0, queues=4)
    wait_committed(mqadmin, tag_b.group, topic, diff=0, queues=4)  # filtered ones are passed over too
    wait_committed(mqadmin, part.group, topic, diff=14, queues=4)  # the held one and all behind it
    groups = [everything.group, tag_b.group, part.group]
    progress = {g: parse_consumer_progress(mqadmin.run("consumerProgress", "-g", g).out) for g in groups}

    def committed(group, m):
        return progress[group].row(topic, m.broker, m.queue_id).consumer_offset

    chosen = {
        "consumed by part": next(m for m in sent if m.queue_offset < committed(part.group, m)),
        "not yet by part": next(m for m in sent if m.queue_offset >= committed(part.group, m)),
        "TagA": next(m for m in sent if m.tag == "TagA"),
    }
    timings = []
    for why, m in chosen.items():
        ours = _ours(namesrv, topic, m)
        timings.append((ours["find_s"], ours["track_s"]))
        (by_offset,) = ours["by_offset"].messages
        assert [f.message.offset_msg_id for f in ours["by_client_id"].messages] == [m.offset_msg_id], why
        assert [f.message.offset_msg_id for f in ours["at"].messages] == [m.offset_msg_id], why
        printed = mqadmin.run("queryMsgById", "-t", topic, "-i", m.offset_msg_id).out
        _same_message(parse_message(printed), by_offset, topic)
        # queryMsgByUniqueKey keeps the admin client of its first run in the command object, and
        # MQAdminStartup keeps its command objects in a static list: in mqadmin's long-lived JVM
        # each later run queries through a client already shut down and says "no message" (CODE
        # 208). So it runs as the script runs it, in a JVM of its own.
        by_unique_key = mqadmin.run_fresh("queryMsgByUniqueKey", "-t", topic, "-i", m.msg_id).out
        _same_message(parse_message(by_unique_key), ours["by_client_id"].messages[0], topic)
        by_key = parse_key_query(mqadmin.run("queryMsgByKey", "-t", topic, "-k", m.key).out)
        ours_by_key = [(f.message.msg_id, f.message.queue_id, f.message.queue_offset) for f in ours["by_key"].messages]
        assert ours_by_key == by_key == [(m.msg_id, m.queue_id, m.queue_offset)], why

        tracks = parse_message_tracks(printed)
        verdicts = {g.group: g for g in ours["tracking"].groups}
        assert set(groups) <= set(verdicts) and set(groups) <= set(tracks), (why, tracks)
        for group in groups:
            expected = MQADMIN_VERDICTS[tracks[group][0]]
            assert verdicts[group].verdict == expected, (why, group, verdicts[group], tracks[group])
            assert verdicts[group].committed == committed(group, m), (why, group)
        if m.tag == "TagA":
            assert verdicts[tag_b.group].verdict == "filtered"
        if verdicts[part.group].verdict == "not_yet":
            assert verdicts[part.group].ahead == m.queue_offset - committed(part.group, m)
    print(f"\n  find (4 lookups) {max(f for f, _ in timings) * 1000:.0f} ms, "
          f"track of 3 groups {max(t for _, t in timings) * 1000:.0f} ms at most")  # fmt: skip

    # the topic's messages in the time range, a page of 10 at a time: each once, oldest first
    async def pages():
        async with AdminClient(namesrv) as client:
            seen, cursor = [], None
            while True:
                page = await lookup.read_time_page(client, topic, begin, end, cursor=cursor, size=10)
                seen += [f.message for f in page.messages]
                if not page.more:
                    return seen, page.total
                cursor = page.cursor

    browsed, total = run(pages())
    assert sorted(m.msg_id for m in browsed) == sorted(m.msg_id for m in sent) and total == 24
    assert [m.store_timestamp for m in browsed] == sorted(m.store_timestamp for m in browsed)

    # the same through the API, as a viewer: the verdicts, and no body
    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    client.force_login(personas["viewer"])
    m = chosen["TagA"]
    data = client.get(f"/api/messages/local/{topic}/{m.broker}/{m.queue_id}/{m.queue_offset}/track/").json()
    assert {g["group"]: g["verdict"] for g in data["groups"] if g["group"] in groups}[tag_b.group] == "filtered"
    message = client.get(f"/api/messages/local/{topic}/{m.broker}/{m.queue_id}/{m.queue_offset}/").json()
    assert message["body_base64"] is None and message["unique_key"] == m.msg_id


def test_dead_letters_are_followed_through_their_retry_copies_into_the_dlq(settled, namesrv, mqadmin):
    doomed = next(m for m in settled.produced.sent if m.msg_id in settled.doomed)
    survivor = next(m for m in settled.produced.sent if m.msg_id not in settled.doomed and m.key != settled.stalled_key)
    held = next(m for m in settled.produced.sent if m.key == settled.stalled_key)

    async def read(sent):
        async with AdminClient(namesrv) as client:
            found = await lookup.find_by_id(client, sent.offset_msg_id)
            return {g.group: g for g in (await track(client, found.messages[0])).groups}

    dead = run(read(doomed))[settled.failing.group]
    assert dead.verdict == "dlq", dead
    retries = [c for c in dead.copies if c.kind == "retry"]
    # delivered three times (maxReconsumeTimes 2): two redeliveries from the retry topic, then the DLQ
    assert sorted(c.reconsume_times for c in retries) == [1, 2]
    assert all(c.consumed for c in retries)  # each redelivery was taken (and failed)
    assert [c.reconsume_times for c in dead.copies if c.kind == "dlq"] == [3]
    # each redelivery first waited out its delay in SCHEDULE_TOPIC_XXXX (levels 3 + reconsume times)
    scheduled = sorted((c.reconsume_times, c.delay_level) for c in dead.copies if c.kind == "scheduled")
    assert scheduled == [(1, "3"), (2, "4")], dead.copies
    progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", settled.failing.group).out)
    for c in retries:
        assert c.committed == progress.row(c.topic, c.broker, c.queue_id).consumer_offset

    survived = run(read(survivor))
    assert (
        survived[settled.failing.group].verdict == "consumed" and survived[settled.healthy.group].verdict == "consumed"
    )
    stalled = run(read(held))[settled.stalled.group]
    assert (stalled.verdict, stalled.ahead) == ("not_yet", 0), stalled  # its committed offset is pinned on it
    tracks = parse_message_tracks(mqadmin.run("queryMsgById", "-t", settled.topic, "-i", held.offset_msg_id).out)
    assert tracks[settled.stalled.group][0] == "NOT_CONSUME_YET"


def test_finding_by_id_outside_the_scope_answers_as_an_id_that_names_nothing(
    db, traffic, names, create_topic, namesrv, client, redis
):
    """A scoped user who knows an offset id of another team's message learns neither its topic
    nor that it exists: the answers (API and page, with and without a topic of their own) equal
    those for an id of the same shape that names no message."""
    from django.contrib.auth import get_user_model

    from consumers.identity import Grant

    mine, theirs = create_topic(names.topic("scope-mine")), create_topic(names.topic("scope-theirs"))
    (sent,) = traffic.produce(theirs, 1).sent
    Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    user = get_user_model().objects.create_user("scoped-finder")
    Grant.objects.create(subject_kind="user", subject=user.username, role="viewer", clusters="local",
                         groups="scope-nothing-*", topics=mine)  # fmt: skip
    real = sent.offset_msg_id
    nothing = real[:16] + f"{2**62:016X}"  # the same broker, a commit-log offset far past its end
    client.force_login(user)

    def answers(msg_id: str) -> list[str]:
        said = []
        for topic in (mine, ""):
            api = client.get("/api/messages/", {"cluster": "local", "by": "id", "msg_id": msg_id, "topic": topic})
            page = client.get("/messages/", {"cluster": "local", "by": "id", "msg_id": msg_id, "topic": topic})
            assert api.status_code == page.status_code == 200, (api.content, page.status_code)
            said += [api.content.decode().replace(msg_id, "<id>"), page.content.decode().replace(msg_id, "<id>")]
        return said

    csrf = re.compile(r'"(X-CSRFToken|csrfmiddlewaretoken)": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"')
    for outside, unknown in zip(answers(real), answers(nothing), strict=True):
        assert theirs not in outside and csrf.sub("", outside) == csrf.sub("", unknown)
    # the oracle that the id is real: a user who sees everything is shown the message and its topic
    client.force_login(get_user_model().objects.create_superuser("finder-admin"))
    shown = client.get("/api/messages/", {"cluster": "local", "by": "id", "msg_id": real, "topic": mine}).json()
    assert [m["topic"] for m in shown["messages"]] == [theirs] and theirs in " ".join(shown["problems"])
