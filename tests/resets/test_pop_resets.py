"""Resets of POP groups on the real broker (5.3.3): the preview says the group pops, names the
in-flight messages that come back, and the known FIFO POP reset defect (apache/rocketmq#10229);
the undo says what comes back. The group is made POP and FIFO on the broker itself (mqadmin
setConsumeMode, updateSubGroup -o true); no client is needed to tell it."""

from __future__ import annotations

import pytest

from consumers.changes.models import State
from consumers.changes.workflow import Actor, approve
from consumers.models import Cluster
from consumers.resets import execute
from consumers.resets.defects import IN_FLIGHT_NOTE, UNDO_NOTE
from consumers.resets.services import preview, request_reset, undo
from tests.resets.test_resets import mqadmin_offsets
from tests.support.scenarios import offline_group

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cluster(db, namesrv, settings, redis):
    settings.RESET_VERIFY_SECONDS = 2
    return Cluster.objects.create(name="local", namesrv_addrs=namesrv)


def pop_group(mqadmin, namesrv, traffic, topic: str, group: str, *, fifo: bool) -> dict:
    sent = traffic.produce(topic, 16).sent
    ends = {}
    for m in sent:
        ends[(topic, m.broker, m.queue_id)] = max(ends.get((topic, m.broker, m.queue_id), 0), m.queue_offset + 1)
    offline_group(mqadmin, namesrv, group, ends)
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group, "-o", "true" if fifo else "false")
    mqadmin.run("setConsumeMode", "-c", "DefaultCluster", "-t", topic, "-g", group, "-m", "POP", "-q", "8")
    return ends


def test_a_fifo_pop_groups_preview_names_the_known_defect_and_the_undo_what_comes_back(
    personas, cluster, traffic, names, create_topic, mqadmin, namesrv, client
):
    topic, group = create_topic(names.topic("fifo-pop")), names.group("fifo-pop")
    ends = pop_group(mqadmin, namesrv, traffic, topic, group, fifo=True)
    plan = preview(cluster, group, {"strategy": "earliest"})
    assert (plan["pop"], plan["fifo"]) == (True, True)
    assert plan["warnings"][0] == IN_FLIGHT_NOTE
    [defect] = [w for w in plan["warnings"] if "apache/rocketmq#10229" in w]
    brokers = sorted({b for _, b, _ in ends})
    assert all(f"{b} (V5_3_3)" in defect for b in brokers), defect

    operator, approver = Actor(personas["operator"]), Actor(personas["approver"])
    request = request_reset(actor=operator, cluster=cluster, group=group, params={"strategy": "earliest"},
                            reason="replay")  # fmt: skip
    approve(request, actor=approver)
    done = execute.execute_reset(request.pk)
    assert done.state == State.DONE, done.result
    assert set(mqadmin_offsets(mqadmin, group, topic).values()) == {0}
    back = undo(done, actor=operator, reason="put it back")
    assert back.plan["warnings"][-1] == UNDO_NOTE
    client.force_login(personas["approver"])
    page = client.get(f"/changes/{back.pk}/").content.decode()
    assert "apache/rocketmq#10229" in page and "come back after their invisible time" in page


def test_a_pop_group_that_is_not_fifo_gets_only_the_in_flight_note_and_a_classic_group_none(
    cluster, traffic, names, create_topic, mqadmin, namesrv
):
    topic, group = create_topic(names.topic("plain-pop")), names.group("plain-pop")
    ends = pop_group(mqadmin, namesrv, traffic, topic, group, fifo=False)
    plan = preview(cluster, group, {"strategy": "earliest"})
    assert (plan["pop"], plan["fifo"], plan["warnings"]) == (True, False, [IN_FLIGHT_NOTE])

    classic = names.group("classic")
    offline_group(mqadmin, namesrv, classic, dict.fromkeys(ends, 1))
    plan = preview(cluster, classic, {"strategy": "earliest"})
    assert (plan["pop"], plan["fifo"], plan["warnings"]) == (False, None, [])
