"""A reset's approval is bound to its effect, against the real broker: the approver sees what
moved since the preview; an approval or a run that finds the effect changed writes nothing.
Oracles: mqadmin consumerProgress and the offsets the test committed itself."""

from __future__ import annotations

from collections import Counter

import pytest

from consumers.changes.guards import ChangeRefused
from consumers.changes.models import State
from consumers.changes.workflow import Actor, approve
from consumers.resets import execute
from consumers.resets.services import request_reset
from consumers.rocketmq import AdminClient
from consumers.rocketmq.models import MessageQueue
from tests.conftest import run
from tests.resets.test_resets import mqadmin_offsets
from tests.support.scenarios import offline_group

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def test_the_approver_sees_what_moved_since_the_preview(
    client, personas, cluster, traffic, names, create_topic, mqadmin, namesrv
):
    topic, group = create_topic(names.topic("moved")), names.group("moved")
    first = traffic.produce(topic, 8).sent
    offline_group(mqadmin, namesrv, group, {(topic, m.broker, m.queue_id): 0 for m in first})
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "latest"}, reason="x"
    )
    later = traffic.produce(topic, 8).sent  # arrives after the preview was read
    client.force_login(personas["approver"])
    page = client.get(f"/changes/{request.pk}/").content.decode()
    grown = Counter(f"{topic}@{m.broker}#{m.queue_id}" for m in later)
    for label, count in grown.items():
        assert f"{label}: {count} new message(s)" in page


def commit_all(namesrv, group: str, offsets: dict[str, int]) -> None:
    """Commit offsets by label (topic@broker#queue), as a consumer moving on would."""

    async def send():
        async with AdminClient(namesrv) as client:
            for label, offset in offsets.items():
                topic, _, rest = label.partition("@")
                broker, _, queue_id = rest.partition("#")
                await client.actions.update_consumer_offset(group, MessageQueue(topic, broker, int(queue_id)), offset)

    run(send())


def test_approval_is_bound_to_the_effect_not_to_the_time(
    client, personas, cluster, traffic, names, create_topic, mqadmin, namesrv, broker_calls
):
    """The 160 -> 660 case: shift -20 previewed from 25 per queue; the group then moves on to 88,
    so the same targets would replay about 660. Refused on page and API; after a refresh the
    run replays what the new preview said."""
    topic, group = create_topic(names.topic("effect")), names.group("effect")
    ends = Counter(f"{topic}@{m.broker}#{m.queue_id}" for m in traffic.produce(topic, 1200).sent)
    assert len(ends) == 8 and min(ends.values()) >= 100, ends
    offline_group(mqadmin, namesrv, group, {(topic, *_parts(label)): 25 for label in ends})
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "shift", "shift": -20},
        reason="replay the last 20",
    )  # fmt: skip
    assert request.plan["totals"][topic]["reconsumed"] == 160
    commit_all(namesrv, group, dict.fromkeys(ends, 88))
    broker_calls.clear()
    with pytest.raises(ChangeRefused, match="160 → 664 re-consumed"):
        approve(request, actor=Actor(personas["approver"]))
    client.force_login(personas["approver"])
    api = client.post(f"/api/changes/{request.pk}/approve/", {}, content_type="application/json")
    assert api.status_code == 409 and "160 → 664 re-consumed" in api.json()["error"]
    page = client.post(f"/changes/{request.pk}/decide/", {"action": "approve"})
    assert page.status_code == 409 and "160 → 664 re-consumed" in page.content.decode()
    document = client.get(f"/api/changes/{request.pk}/").json()  # the API shows what moved, as the page
    assert {m["label"]: m["committed_advanced"] for m in document["moved_since_preview"]} == dict.fromkeys(ends, 63)
    request.refresh_from_db()
    assert request.state == State.PENDING and sum(broker_calls.values()) == 0  # nothing written
    assert set(mqadmin_offsets(mqadmin, group, topic).values()) == {88}

    refreshed = client.post(f"/changes/{request.pk}/decide/", {"action": "refresh"})
    assert refreshed.status_code in (200, 302)
    request.refresh_from_db()
    assert {r["target"] for r in request.plan["rows"]} == {68} and request.plan["totals"][topic]["reconsumed"] == 160
    event = request.events.filter(action="refresh-preview").get()
    assert event.details["previous_totals"][topic]["reconsumed"] == event.details["totals"][topic]["reconsumed"]
    commit_all(namesrv, group, dict.fromkeys(ends, 90))  # 16 messages apart: within the tolerance
    approve(request, actor=Actor(personas["approver"]))
    done = execute.execute_reset(request.pk)
    assert done.state == State.DONE, done.result
    assert mqadmin_offsets(mqadmin, group, topic) == dict.fromkeys(ends, 68)  # 22 replayed per queue


def test_a_run_that_finds_the_effect_changed_since_the_approval_writes_nothing(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv, broker_calls
):
    topic, group = create_topic(names.topic("effect-run")), names.group("effect-run")
    ends = Counter(f"{topic}@{m.broker}#{m.queue_id}" for m in traffic.produce(topic, 1200).sent)
    offline_group(mqadmin, namesrv, group, {(topic, *_parts(label)): 10 for label in ends})
    request = request_reset(
        actor=Actor(personas["operator"]), cluster=cluster, group=group, params={"strategy": "earliest"}, reason="x"
    )
    approve(request, actor=Actor(personas["approver"]))
    commit_all(namesrv, group, dict.fromkeys(ends, 90))  # the group moved on before the worker ran
    broker_calls.clear()
    failed = execute.execute_reset(request.pk)
    assert failed.state == State.FAILED and "nothing was written: the effect changed" in failed.result["error"]
    assert "80 → 720 re-consumed" in failed.result["error"]
    assert sum(broker_calls.values()) == 0 and set(mqadmin_offsets(mqadmin, group, topic).values()) == {90}


def _parts(label: str) -> tuple[str, int]:
    broker, _, queue_id = label.partition("@")[2].partition("#")
    return broker, int(queue_id)
