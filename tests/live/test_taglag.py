"""Tag-filtered lag (consumers/live/taglag.py) against a consume queue held in memory that
answers as the broker does: from one file at a time, nothing below its oldest unit. The expected
figures are counted by hand from the same list of tags."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from consumers.live import building, taglag
from consumers.rocketmq import GroupProgress, RocketMQError
from consumers.rocketmq.models import ConsumerConnection, SubscriptionData
from consumers.rocketmq.ops.consumequeue import UnitSlice, _signed32
from consumers.rocketmq.positions import QueueProgress
from consumers.rocketmq.tags import filter_codes, java_hash

FILE = 1_000  # units per consume-queue file here (300,000 on a real broker); a multiple of BLOCK


class FakeQueues:
    """Queue id -> the tag of each stored message (None: no tag), oldest kept from `min_offset`."""

    def __init__(self, tags: dict[int, list[str | None]], min_offset: int = 0, fail: set[int] = frozenset()):
        self.tags, self.min_offset, self.fail, self.asked = tags, min_offset, fail, []

    async def units(self, address, mq, start, count):
        self.asked.append((mq.queue_id, start, count))
        if mq.queue_id in self.fail:
            raise RocketMQError("RequestTimeout: no response")
        tags = self.tags[mq.queue_id]
        if start < self.min_offset or start >= len(tags):
            return UnitSlice(start, [], [], -1, -1)
        stop = min(start + count, len(tags), (start // FILE + 1) * FILE)  # never past its file
        codes = [java_hash(t) if t else 0 for t in tags[start:stop]]
        return UnitSlice(start, codes, [o * 100 for o in range(start, stop)], self.min_offset, len(tags))


def group(name: str, offsets: dict[int, int], tags: dict[int, list], subscription: str | None = "A || C",
          kind: str = "TAG", min_offset: int = 0) -> GroupProgress:  # fmt: skip
    progress = GroupProgress(group=name, fetched_at=1.0, online=subscription is not None)
    progress.queues = [QueueProgress("T", "b", q, len(tags[q]), o, min_offset, o, 1, ()) for q, o in offsets.items()]
    if subscription is not None:
        sub = SubscriptionData("T", subscription, kind, [t.strip() for t in subscription.split("||")])
        progress.connection = ConsumerConnection([], {"T": sub}, "CONSUME_PASSIVELY", "CLUSTERING", None)
    return progress


def measure(redis, fake: FakeQueues, groups: list[GroupProgress], budget: int = 100_000, remembered=None):
    client = SimpleNamespace(consume_queues=fake)
    return asyncio.run(taglag.measure(client, groups, redis=redis, cache_key="tl", budget=budget,
                                      addresses={"b": "127.0.0.1:1"}, remembered=remembered or {}))  # fmt: skip


def mixed(n: int, seed: int = 0) -> list[str | None]:
    cycle = ["A", "B", "C", "B", None, "B", "A", "B", "B"]
    return [cycle[(i * 7 + seed) % len(cycle)] for i in range(n)]


def by_hand(tags: list, low: int, wanted=("A", "C")) -> int:
    return sum(1 for t in tags[low:] if t in wanted)


def test_java_hash_codes_are_javas_and_subscriptions_give_theirs():
    # String.hashCode as Java computes it (values from the JDK), UTF-16 code units and all
    assert [java_hash(t) for t in ("TagA", "TagB", "", "polygenelubricants")] == [2598919, 2598920, 0, -(2**31)]
    assert java_hash("中文") == 0x4E2D * 31 + 0x6587 and java_hash("😀") == 0xD83D * 31 + 0xDE00
    assert _signed32(2**32 + 65) == 65 and _signed32(2**31) == -(2**31)  # Long.intValue()
    assert filter_codes(SubscriptionData("T", "*")) is None and filter_codes(SubscriptionData("T", " ")) is None
    assert filter_codes(SubscriptionData("T", "TagA || TagB", tags=["TagA", "TagB"])) == {2598919, 2598920}
    assert filter_codes(SubscriptionData("T", "TagA||TagB")) == {2598919, 2598920}  # no tagsSet sent
    with pytest.raises(ValueError):
        filter_codes(SubscriptionData("T", "a > 1", "SQL92"))


def test_each_queue_counts_the_messages_its_tags_take_from_its_offset_exactly(redis):
    tags = {0: mixed(2_345), 1: mixed(1_250, seed=3), 2: mixed(90, seed=5)}
    offsets = {0: 117, 1: 1_000, 2: 90}  # inside a block; on a block's and a file's edge; at the end
    found = measure(redis, FakeQueues(tags), [group("G", offsets, tags)])
    assert {q.queue_id: v for (_, q), v in found.queues.items()} == {
        0: taglag.TagLag(by_hand(tags[0], 117)),
        1: taglag.TagLag(by_hand(tags[1], 1_000)),
        2: taglag.TagLag(0),
    }
    assert found.filters == {"G": {"T": "TAG: A || C"}} and found.remembered == set()


def test_full_blocks_are_read_once_and_a_moved_offset_is_counted_from_the_cache(redis):
    tags = {0: mixed(3_000)}
    fake = FakeQueues(tags)
    measure(redis, fake, [group("G", {0: 10}, tags)])
    first = sum(count for _, _, count in fake.asked)
    assert first >= 2_990 and redis.hlen("tl") == 3_000 // taglag.BLOCK  # every full block kept
    assert taglag._decode(taglag._encode(tags_codes := [5, -7, 5, 0] * 60).encode()) == tags_codes  # as kept
    assert taglag._decode(taglag._encode(list(range(-125, 125))).encode()) == list(range(-125, 125))  # many tags
    fake.asked.clear()
    tags[0] += mixed(130, seed=4)  # more produced; the group moved on, into the middle of a block
    again = measure(redis, fake, [group("G", {0: 1_801}, tags)])
    read = sorted({start // taglag.BLOCK for _, start, _ in fake.asked})
    assert read == [3_000 // taglag.BLOCK]  # only the new, filling block: the one it is in is kept whole
    assert list(again.queues.values()) == [taglag.TagLag(by_hand(tags[0], 1_801))]


def test_over_the_budget_a_queue_is_estimated_and_says_so_and_gets_exact_on_later_polls(redis):
    tags = {0: mixed(2_000), 1: mixed(300, seed=1)}
    fake, groups = FakeQueues(tags), [group("G", {0: 0, 1: 40}, tags)]
    found = measure(redis, fake, groups, budget=750)
    # the smaller queue first, whole; the rest of the budget on the larger one
    assert found.queues[("G", groups[0].queues[1].queue)] == taglag.TagLag(by_hand(tags[1], 40))
    estimate = found.queues[("G", groups[0].queues[0].queue)]
    share = by_hand(tags[0][:250], 0) / 250  # the one block of queue 0 the budget allowed
    assert estimate == taglag.TagLag(round(2_000 * share), taglag.TAG_LAG_ESTIMATED
                                     % {"counted": 250, "units": 2_000, "budget": 750})  # fmt: skip
    doc = building.build_document(groups[0], lag_times={}, dlq_count=0, previous=None, tag_lags=found)
    assert doc.tag_lag_estimated and doc.tag_lag == estimate.lag + by_hand(tags[1], 40)
    # 750 units (3 blocks) a poll, the fewest needs first: queue 1's blocks 0 and 1 then queue 0's
    # block 0; then queue 1's filling block (re-read each poll) and two of queue 0's, twice; at
    # the fifth poll queue 0 lacks one block, ties with queue 1's one, and is listed first
    polls = 1
    while found.queues[("G", groups[0].queues[0].queue)].note:
        found, polls = measure(redis, fake, groups, budget=750), polls + 1
    assert polls == 5 and found.queues[("G", groups[0].queues[0].queue)] == taglag.TagLag(by_hand(tags[0], 0))


def test_nothing_read_is_unknown_not_zero_and_errors_and_sql_filters_say_why(redis):
    tags = {0: mixed(600), 1: mixed(600)}
    found = measure(redis, FakeQueues(tags, fail={1}), [group("G", {0: 0, 1: 0}, tags)], budget=100)
    assert [v.lag for v in found.queues.values()] == [None, None]
    assert [v.note for v in found.queues.values()] == [
        taglag.TAG_LAG_OVER_BUDGET % {"budget": 100},
        taglag.TAG_LAG_OVER_BUDGET % {"budget": 100},
    ]
    found = measure(redis, FakeQueues(tags, fail={1}), [group("G", {0: 0, 1: 0}, tags)])
    assert found.queues[("G", group("G", {1: 0}, tags).queues[0].queue)] == taglag.TagLag(
        None, taglag.TAG_LAG_UNREAD % {"error": "RequestTimeout: no response"}
    )
    sql = measure(redis, FakeQueues(tags), [group("S", {0: 0}, tags, subscription="a > 1", kind="SQL92")])
    assert list(sql.queues.values()) == [taglag.TagLag(None, taglag.TAG_LAG_SQL)]
    everything = measure(redis, FakeQueues(tags), [group("E", {0: 0}, tags, subscription="*")])
    assert everything.queues == {} and everything.filters == {}


def test_expired_messages_are_not_counted_and_an_offline_group_keeps_its_last_seen_tags(redis):
    tags = {0: mixed(1_600)}
    online = group("G", {0: 1_500}, tags)
    taglag.remember(redis, "subs", [online])
    offline = group("G", {0: 100}, tags, subscription=None, min_offset=420)
    remembered = taglag.recall(redis, "subs", [offline])
    assert remembered == {"G": {"T": ["TAG", "A || C", ["A", "C"]]}}
    found = measure(redis, FakeQueues(tags, min_offset=420), [offline], remembered=remembered)
    assert list(found.queues.values()) == [taglag.TagLag(by_hand(tags[0], 420))]  # below 420: gone
    assert found.remembered == {"G"} and found.filters == {"G": {"T": "TAG: A || C"}}
    doc = building.build_document(offline, lag_times={}, dlq_count=0, previous=None, tag_lags=found)
    assert (doc.tag_lag, doc.tag_filters_as_seen, doc.lag) == (by_hand(tags[0], 420), True, 1_500)
