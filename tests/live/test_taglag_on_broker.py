"""Lag that respects tag filters, on the real cluster: a topic carrying tags A and B in a 1:3 mix,
a group of the classic push consumer subscribed to A. Once its client has gone, the console
keeps the subscription it last said; at three sets of committed offsets (written to the broker
as an offline group's), each queue's lag for its tags equals the A messages above its offset in
the harness's own send records, and the raw lag equals mqadmin's consumerProgress."""

from __future__ import annotations

import asyncio

import pytest

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.rocketmq import AdminClient
from consumers.rocketmq.models import MessageQueue
from devstack.mqadmin import parse_consumer_progress
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker]

# message i gets TAGS[i % 16] and (the producer goes round the 4 queues) queue i % 4: one A in four
# on every queue, at a different place in each
TAGS = ["A" if i in (0, 5, 10, 15) else "B" for i in range(16)]


def test_lag_for_a_groups_tags_equals_the_matching_messages_sent_above_its_offsets(
    db, namesrv, names, create_topic, traffic, redis, history_dir, mqadmin, viewer_client
):
    topic, group = create_topic(names.topic("tags"), queues=2), names.group("tags")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)

    def poll():
        poll_cluster(cluster)
        return snapshots.read_details(redis, cluster.pk)[group]

    sent = traffic.produce(topic, 40, tags=TAGS).sent
    consumer = traffic.consume(group, topic, subscription="A")
    consumer.wait_acked(10)
    wait(lambda: (d := poll()).online and d.lag == 0 and d.tag_filters, 60, "the group caught up, online")
    assert poll().tag_filters == {topic: "TAG: A"} and poll().tag_lag == 0
    consumer.stop()
    wait(lambda: poll().online is False, 60, "the group offline")
    sent += traffic.produce(topic, 2_400, tags=TAGS, timeout=180).sent
    ends: dict[tuple[str, int], int] = {}
    for m in sent:
        ends[(m.broker, m.queue_id)] = max(ends.get((m.broker, m.queue_id), 0), m.queue_offset + 1)
    assert len(ends) == 4 and min(ends.values()) > 500  # two blocks and more per queue
    assert all(sum(1 for m in sent if (m.broker, m.queue_id) == q and m.tag == "A") > 100 for q in ends)

    async def commit(offsets: dict[tuple[str, int], int]) -> None:
        async with AdminClient(namesrv) as client:
            for (broker, queue_id), offset in offsets.items():
                await client.actions.update_consumer_offset(group, MessageQueue(topic, broker, queue_id), offset)

    for share in (0.0, 0.37, 0.81):
        # not on a block's edge (taglag.BLOCK), and different on each queue
        offsets = {q: int(end * share) + i * 7 for i, (q, end) in enumerate(sorted(ends.items()))}
        asyncio.run(commit(offsets))
        doc = poll()
        rows = {(r.broker, r.queue_id): r for r in doc.queues if r.topic == topic}
        expected = {q: sum(1 for m in sent if (m.broker, m.queue_id) == q and m.tag == "A" and m.queue_offset >= o)
                    for q, o in offsets.items()}  # fmt: skip
        print(f"\nat {share:.0%}: raw lag {doc.lag}, for its tags {doc.tag_lag}; by the send records {expected}")
        assert {q: (r.consumer, r.tag_lag, r.tag_lag_note) for q, r in rows.items()} == {
            q: (offsets[q], expected[q], None) for q in offsets
        }
        assert doc.tag_lag == sum(expected.values()) and doc.tag_filters_as_seen and not doc.tag_lag_estimated
        theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
        assert {(r.broker, r.queue_id): r.diff for r in theirs.rows if r.topic == topic} == {
            q: r.lag for q, r in rows.items()
        }
        assert doc.lag == theirs.diff_total

    # what an operator reads: both figures, the filter as last seen, and per queue
    page = viewer_client.get(f"/groups/local/{group}/").content.decode()
    stat = page.split('id="tag-lag"', 1)[1].split("</div>", 1)[0]
    assert f"<b>{doc.tag_lag}</b>" in stat and "TAG: A" in stat and "as last seen" in stat
    assert page.count('<div class="tag-lag muted"') == 4
    listed = viewer_client.get("/groups/", {"q": group}).content.decode()
    assert f"for its tags: {doc.tag_lag}" in listed.replace("</span>", "")
    api = viewer_client.get(f"/api/groups/local/{group}/").json()
    assert (api["tag_lag"], api["tag_filters"], api["lag"]) == (doc.tag_lag, {topic: "TAG: A"}, doc.lag)
