"""A split poll's staged documents (consumers/live/staging.py) becoming the detail hash in the
poll's transaction (snapshots.write_poll); the whole split poll on the real cluster is in
test_parts.py."""

from __future__ import annotations

import dataclasses

from consumers.live import snapshots, staging, window
from consumers.live.documents import ClusterMeta, GroupDocument, QueueRow
from consumers.live.health import Sample
from consumers.live.history_rows import history_tables


def _doc(group: str, lag: int) -> GroupDocument:
    values = {f.name: None for f in dataclasses.fields(QueueRow)}
    values.update(topic="T", broker="broker-a", queue_id=0, retry=False, lag=lag, consumer=5, max=5 + lag, clients=[])
    return GroupDocument(group=group, as_of=100.0, lag=lag, topics=["T"], online=False, queues=[QueueRow(**values)])


def test_the_staged_documents_become_the_detail_hash_with_the_groups_the_poll_adds(redis):
    old = {"gone": _doc("gone", 1)}
    meta = ClusterMeta(cluster_id=3, name="c", polled_at=90.0, duration=1.0, status="ok")
    snapshots.write_poll(redis, 3, meta=meta, documents=old, samples={}, polled_at=90.0)
    # two parts staged theirs; the poll carried one group over (a part not read, whole document)
    # and marked a staged one as made from a POP retry topic, which only it can see
    whole = {"a": _doc("a", 3), "a_T": _doc("a_T", 0), "b": _doc("b", 7)}
    pipe = redis.pipeline()
    staging.stage(pipe, staging.key(3, "p9"), {"a": whole["a"], "a_T": whole["a_T"]})
    staging.stage(pipe, staging.key(3, "p9"), {"b": whole["b"]})
    pipe.execute()
    assert redis.ttl(staging.key(3, "p9")) > 0  # a poll that never publishes leaves nothing for good
    documents = {g: GroupDocument.from_wire(staging.light(d)) for g, d in whole.items()}
    documents["a_T"].made_from_retry_topic = "%RETRY%a_T"
    documents["c"] = dataclasses.replace(_doc("c", 2), stale=True, stale_reason="part 2 of 2 was not read")
    staged = staging.Staged(staging.key(3, "p9"), groups={"a", "a_T", "b"})
    snapshots.write_poll(redis, 3, meta=meta, documents=documents, samples={}, polled_at=100.0, staged=staged)

    details = snapshots.read_details(redis, 3)
    assert set(details) == {"a", "a_T", "b", "c"}  # the last poll's documents replaced, none lost
    assert details["a"] == whole["a"] and details["b"] == whole["b"]  # with their queues
    assert details["a_T"] == dataclasses.replace(whole["a_T"], made_from_retry_topic="%RETRY%a_T")
    assert details["c"].stale and details["c"].queues == documents["c"].queues
    assert redis.ttl(snapshots.key(3, "detail")) == -1 and not redis.exists(staging.key(3, "p9"))
    index = snapshots.read_index(redis, [3])[3]
    assert [(e["group"], e["lag"]) for e in index] == [("a", 3), ("a_T", 0), ("b", 7), ("c", 2)]


def test_a_split_polls_history_is_its_own_rows_and_the_parts(redis):
    staged = staging.Staged("k")
    staged.add_history(history_tables([_doc("a", 3)]))
    staged.add_history(history_tables([_doc("b", 7)]))
    tables = staged.tables(history_tables([_doc("c", 2)]))
    assert tables["group_stats"].column("group").to_pylist() == ["c", "a", "b"]
    assert staging.table_from(staging.table_bytes(tables["queue_offsets"])).equals(tables["queue_offsets"])


def test_a_part_stages_nothing_once_the_poll_has_closed_its_staging(redis):
    doc = _doc("a", 3)
    assert staging.stage_open(redis, 3, "p1", {"a": doc}, {"a": Sample(t=100.0, online=False, lag=3)})
    assert snapshots_hash(redis, "p1") == {"a"}
    assert set(window.Reader(redis, 3, since=0).ranges) == set()  # the entry is not pushed yet
    assert redis.hkeys(window.hash_key(3, "p1")) == [b"a\na"]
    staging.close(redis, 3, "p1")
    # late: the poll carried b over, and wrote b's sample of this poll itself: none from the part
    late = staging.stage_open(redis, 3, "p1", {"b": _doc("b", 1)}, {"b": Sample(t=100.0, online=False, lag=1)})
    assert not late
    assert snapshots_hash(redis, "p1") == {"a"}
    assert redis.hkeys(window.hash_key(3, "p1")) == [b"a\na"]


def test_a_close_between_a_parts_check_and_its_write_stops_the_write(redis, monkeypatch):
    real = redis.pipeline

    def closing_meanwhile(*args, **kwargs):
        pipe = real(*args, **kwargs)
        exists = pipe.exists

        def checked(name):
            found = exists(name)
            staging.close(redis, 3, "p2")  # the poll closes right after the part looked
            return found

        pipe.exists = checked
        return pipe

    monkeypatch.setattr(redis, "pipeline", closing_meanwhile)
    assert not staging.stage_open(redis, 3, "p2", {"a": _doc("a", 3)}, {"a": Sample(t=100.0, online=False, lag=3)})
    assert not redis.exists(staging.key(3, "p2"))
    assert not redis.exists(window.hash_key(3, "p2"))


def snapshots_hash(redis, poll_id: str) -> set[str]:
    return {g.decode() for g in redis.hkeys(staging.key(3, poll_id))}
