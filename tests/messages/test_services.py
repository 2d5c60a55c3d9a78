"""The services behind the message pages, on a fake cluster served from a thread (the services
run their own event loop through run_on_cluster): the last poll's view of each group reaches the
track, and a dead letter carries the console's redrives of it."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from django.utils import timezone

from consumers.dlq.models import RedriveJob, RedrivenMessage
from consumers.messages import selectors, services
from consumers.messages.forms import Search
from consumers.models import Cluster
from tests.support.fake_cluster import FakeCluster, connection
from tests.support.published import group, publish

UNIQ = "7F0000010C9C18B4AAC27D3A6E4F0001"


@contextlib.contextmanager
def serving(cluster: FakeCluster):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(cluster.start(), loop).result()
    try:
        yield cluster
    finally:
        asyncio.run_coroutine_threadsafe(cluster.stop(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


@pytest.fixture
def fake():
    c = FakeCluster()
    for i in range(3):
        c.add("orders", "broker-a", 0, {"UNIQ_KEY": UNIQ if i == 2 else f"{i:032X}", "TAGS": "paid", "KEYS": f"k{i}"})
    c.add("%DLQ%g-dead", "broker-a", 0, {"UNIQ_KEY": UNIQ, "RETRY_TOPIC": "orders"}, reconsume_times=3,
          store_ms=1_800_000_000_000)  # fmt: skip
    c.consumers_of["orders"] = ["g-dead", "g-live"]
    c.offsets[("g-dead", "orders", "broker-a", 0)] = 3
    c.offsets[("g-live", "orders", "broker-a", 0)] = 1
    c.connections["g-live"] = connection("orders")
    with serving(c):
        yield c


@pytest.fixture
def cluster(db, fake):
    return Cluster.objects.create(name="east", namesrv_addrs=fake.namesrv)


def test_find_and_one_message_through_the_services(cluster):
    found = services.find(cluster, Search(by="key", topic="orders", key="k1"))
    assert [f.message.queue_offset for f in found.found.messages] == [1]
    assert services.message(cluster, "orders", "broker-a", 0, 2).message.properties["UNIQ_KEY"] == UNIQ
    with pytest.raises(services.MessageNotFound, match="next offset is 3"):
        services.message(cluster, "orders", "broker-a", 0, 3)
    with pytest.raises(services.NoSuchTopic, match="no topic nowhere"):
        services.find(cluster, Search(by="key", topic="nowhere", key="k1"))


def test_the_track_carries_the_redrives_of_a_dead_letter(cluster, personas, redis):
    job = RedriveJob.objects.create(cluster=cluster, group="g-dead", target="group", rate=10, state="done", total=1,
                                    created_by=personas["operator"])  # fmt: skip
    RedrivenMessage.objects.create(job=job, cluster=cluster, group="g-dead", source="broker-a#0", source_offset=0,
                                   msg_id=UNIQ, target_topic="%RETRY%g-dead", sent_msg_id="S",
                                   sent_at=timezone.now())  # fmt: skip
    found = services.message(cluster, "orders", "broker-a", 0, 2)
    tracking = services.track_message(cluster, found)
    dead = next(g for g in tracking.groups if g.group == "g-dead")
    assert dead.verdict == "dlq"
    (copy,) = dead.copies
    assert [(r["job"], r["target_topic"]) for r in copy.redrives] == [(job.pk, "%RETRY%g-dead")]
    assert next(g for g in tracking.groups if g.group == "g-live").verdict == "not_yet"


def test_hints_are_the_last_polls_view_of_the_groups_on_the_topic(cluster, redis):
    publish(cluster, redis, [group("on-orders", lag=8, topic="orders"), group("elsewhere", lag=3, topic="other")])
    hints = selectors.hints(redis, cluster, "orders", "broker-a", 1)
    assert set(hints) == {"on-orders"}
    hint = hints["on-orders"]
    assert hint.polled_offset == 98 and hint.message_model == "CLUSTERING" and hint.polled_at  # 100 - 2 behind
    assert selectors.hints(redis, cluster, "nobody-reads-this", "broker-a", 0) == {}


def test_a_topic_is_a_teams_to_read_when_its_grant_names_it_not_because_a_group_of_its_consumes_it(
    cluster, redis, personas
):
    """`payments-spy`, committed on orders by anyone with broker access, matches the payments
    team's group pattern: the team still may not read orders. Its grant naming orders (an
    admin's decision) is what opens it; the group's own DLQ is always the team's."""
    from django.contrib.auth import get_user_model

    from consumers.identity import Grant, scope_of

    publish(cluster, redis, [group("payments-spy", lag=1, topic="orders")])
    user = get_user_model().objects.create_user("payments-viewer")
    grant = Grant.objects.create(subject_kind="user", subject=user.username, role="viewer", clusters="east",
                                 groups="payments-*")  # fmt: skip
    with pytest.raises(services.NoSuchTopic, match="no topic orders"):
        services.find(cluster, Search(by="key", topic="orders", key="k1"), scope_of(user))
    assert selectors.topic_visible(cluster, "%DLQ%payments-spy", scope_of(user))
    grant.topics = "orders"
    grant.save()
    user = get_user_model().objects.get(pk=user.pk)  # its next request: the grants read again
    found = services.find(cluster, Search(by="key", topic="orders", key="k1"), scope_of(user))
    assert [f.message.queue_offset for f in found.found.messages] == [1]
