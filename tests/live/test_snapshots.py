"""The health window in Redis: only the entries inside the window are read, oldest first."""

from __future__ import annotations

import json

from consumers.live import snapshots, window
from consumers.live.health import Sample


def sample(t: float, lag: int) -> dict:
    return Sample(t=t, online=True, lag=lag, consumed=lag).to_wire()


def test_the_window_reads_the_entries_since_oldest_first(redis):
    key = window.key(7, "window")
    for t in (100.0, 115.0, 130.0, 145.0):  # entries written before ranges: every sample in them
        redis.lpush(key, snapshots._dumps({"t": t, "s": {"g": sample(t, int(t))}}))
    # an entry that does not put "t" first is still read by its decoded time
    redis.lpush(key, json.dumps({"s": {"g": sample(160.0, 160)}, "t": 160.0}))
    found = window.read(redis, 7, since=115.0)
    assert [s.t for s in found["g"]] == [115.0, 130.0, 145.0, 160.0]
    assert window.read(redis, 7, since=161.0) == {}
    # then polls that write ranges: a whole poll one, a split poll one per part
    for t, ranges in ((175.0, [["g", "h", "x"]]), (190.0, [["a", "g"], ["h", "m"], ["x"]])):
        poll = window.new_id()
        pipe = redis.pipeline()
        for names in ranges:
            window.write_range(pipe, 7, poll, {n: Sample.from_wire(sample(t, len(n))) for n in names})
        window.push(redis, pipe, 7, poll, t)
        pipe.execute()
    found = window.read(redis, 7, since=130.0)
    assert [s.t for s in found["g"]] == [130.0, 145.0, 160.0, 175.0, 190.0]
    assert [s.t for s in found["x"]] == [175.0, 190.0] and [s.t for s in found["a"]] == [190.0]
    mine = window.read(redis, 7, since=130.0, groups=["h", "i"])  # a part's groups: theirs only
    assert set(mine) == {"h"} and [s.t for s in mine["h"]] == [175.0, 190.0]


def test_the_window_keeps_its_newest_entries_and_drops_the_ranges_of_the_others(redis, monkeypatch):
    monkeypatch.setattr(window, "WINDOW_ENTRIES", 3)
    hashes = []
    for t in range(5):
        poll = window.new_id()
        hashes.append(window.hash_key(8, poll))
        pipe = redis.pipeline()
        window.write_range(pipe, 8, poll, {"g": Sample.from_wire(sample(float(t), t))})
        window.push(redis, pipe, 8, poll, float(t))
        pipe.execute()
    assert [s.t for s in window.read(redis, 8, since=0)["g"]] == [2.0, 3.0, 4.0]
    assert [bool(redis.exists(h)) for h in hashes] == [False, False, True, True, True]
    assert redis.ttl(hashes[-1]) == -1  # published: kept until it ages out


def test_a_poll_reads_a_previous_document_only_for_a_group_that_needs_one(redis, db, monkeypatch):
    from consumers.live.snapshots import LazyDetails
    from consumers.models import Cluster
    from consumers.rocketmq import Problem
    from tests.support.published import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    first = publish(cluster, redis, [group("orders", lag=5), group("billing", lag=2)])
    asked = []
    real_get = LazyDetails.get
    monkeypatch.setattr(LazyDetails, "get", lambda self, g: asked.append(g) or real_get(self, g))
    failed = Problem("group", "orders", "DeadlineExceeded: deadline passed", "DeadlineExceeded")
    now = publish(cluster, redis, [group("orders", lag=9, problems=[failed]), group("billing", lag=3)])
    assert asked == ["orders"]  # billing was read whole: its previous document was never decoded
    assert now["orders"].stale and now["orders"].lag == first["orders"].lag == 5  # carried over
    assert not now["billing"].stale and now["billing"].lag == 3


def test_the_index_is_decoded_once_per_poll_and_again_after_a_new_one(redis, monkeypatch):
    key = snapshots.key(8, "index")
    redis.set(key, json.dumps([{"group": "a", "lag": 1}]))
    decoded = []
    real = json.loads
    monkeypatch.setattr(snapshots.json, "loads", lambda raw: decoded.append(raw) or real(raw))
    first, again = (snapshots.read_index(redis, [8])[8] for _ in range(2))
    assert first == [{"group": "a", "lag": 1}] and again is first and len(decoded) == 1
    redis.set(key, json.dumps([{"group": "a", "lag": 2}]))  # the next poll
    assert snapshots.read_index(redis, [8])[8] == [{"group": "a", "lag": 2}] and len(decoded) == 2
    redis.delete(key)
    assert snapshots.read_index(redis, [8])[8] == []  # gone (the cluster removed): nothing kept


def test_a_poll_writes_each_groups_index_entry_and_whole_summary(redis, db):
    from consumers.models import Cluster
    from tests.support.published import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    documents = publish(cluster, redis, [group("orders", lag=5, topic="T-orders"), group("billing", lag=0)])
    [index] = snapshots.read_index(redis, [cluster.pk]).values()
    assert [e["group"] for e in index] == ["billing", "orders"]  # by name
    orders = index[1]
    assert set(orders) == {*snapshots.INDEX_FIELDS, "health", "drain"}
    assert orders["drain"] == {
        "state": documents["orders"].drain["state"],
        "seconds": documents["orders"].drain["seconds"],
    }
    assert (orders["lag"], orders["topics"], orders["health"]) == (
        5,
        ["T-orders"],
        {"state": documents["orders"].health["state"]},
    )
    whole = snapshots.read_summaries(redis, cluster.pk, ["orders", "missing"])
    assert whole == {"orders": documents["orders"].summary()}  # a group not written is left out
    assert snapshots.read_summaries(redis, cluster.pk) == {g: d.summary() for g, d in documents.items()}
    publish(cluster, redis, [group("billing", lag=1)])  # the next poll replaces both
    assert [e["group"] for e in snapshots.read_index(redis, [cluster.pk])[cluster.pk]] == ["billing"]
    assert list(snapshots.read_summaries(redis, cluster.pk)) == ["billing"]


def test_every_process_runs_the_garbage_collector_with_the_configured_thresholds(settings):
    import gc

    assert gc.get_threshold() == settings.GC_THRESHOLDS == (50_000, 50, 50)


def test_summaries_written_before_the_index_are_listed_until_the_next_poll_removes_them(redis, db):
    from consumers.live import selectors
    from consumers.models import Cluster
    from tests.support.published import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    documents = publish(cluster, redis, [group("orders", lag=5)])
    old = [documents["orders"].summary()]  # as the console wrote them before the index
    redis.delete(snapshots.key(cluster.pk, "index"), snapshots.key(cluster.pk, "summaries"))
    redis.set(snapshots.key(cluster.pk, "groups"), json.dumps(old))
    [row] = selectors.group_page(redis, clusters=[cluster]).rows
    assert row.summary == old[0] and row.summary["clients"] == 1
    publish(cluster, redis, [group("orders", lag=6)])
    assert redis.get(snapshots.key(cluster.pk, "groups")) is None
    assert selectors.group_page(redis, clusters=[cluster]).rows[0].summary["lag"] == 6


def test_the_index_is_plain_json_written_and_read_in_chunks(redis, monkeypatch):
    """Chunks of INDEX_CHUNK entries split by line breaks, which any JSON reader (an older release)
    reads as one list; a group name with a line break in it stays inside its string."""
    monkeypatch.setattr(snapshots, "INDEX_CHUNK", 3)
    entries = [{"group": f"g-{i}\n,\n" if i == 4 else f"g-{i}", "lag": i} for i in range(8)]
    text = snapshots._index_text(entries)
    assert text.count(b"\n") == 2 and json.loads(text) == entries
    assert snapshots._index_entries(text) == entries
    assert snapshots._index_entries(b"[]") == snapshots._index_entries(snapshots._index_text([])) == []
    redis.set(snapshots.key(9, "index"), text)
    assert snapshots.read_index(redis, [9])[9] == entries


def test_the_window_drops_the_entries_no_poll_will_judge_on_again(redis):
    """Only the longest health window is kept (and WINDOW_ENTRIES at most): 120 entries of 50,000
    samples would be most of the cluster's Redis memory."""
    for t in range(0, 200, 15):
        poll = window.new_id()
        pipe = redis.pipeline()
        window.write_range(pipe, 9, poll, {"g": Sample.from_wire(sample(float(t), t))})
        window.push(redis, pipe, 9, poll, float(t), keep_seconds=60)
        pipe.execute()
    kept = [s.t for s in window.read(redis, 9, since=0)["g"]]
    assert kept == [135.0, 150.0, 165.0, 180.0, 195.0]  # 195 and those of the 60 s up to it
    assert len(list(redis.scan_iter(match="rmqc:9:window:*"))) == len(kept)


def test_the_window_is_read_a_range_of_groups_at_a_time_each_range_decoded_once(redis, monkeypatch):
    """A whole poll and a split poll cut their ranges at different groups; read in pieces
    (window.Reader, as a poll judges), every piece has its groups' samples of both polls, each
    stored range is fetched once, and a range is let go once the pieces have passed it."""
    monkeypatch.setattr(window, "RANGE_GROUPS", 3)
    names = [f"g{i:02d}" for i in range(10)]
    for t, parts in ((100.0, [names]), (115.0, [names[:5], names[5:]])):
        poll = window.new_id()
        pipe = redis.pipeline()
        for part in parts:
            window.write_range(pipe, 7, poll, {n: Sample.from_wire(sample(t, int(t) + i)) for i, n in enumerate(part)})
        window.push(redis, pipe, 7, poll, t)
        pipe.execute()
    assert sorted(len(redis.hkeys(window.key(7, f"window:{h}"))) for h in _hashes(redis)) == [4, 4]
    fetched = []
    reader = window.Reader(redis, 7, since=0)
    real = reader.redis.pipeline

    def counting(**kwargs):
        pipe = real(**kwargs)
        hget = pipe.hget
        pipe.hget = lambda name, field: fetched.append((name, field)) or hget(name, field)
        return pipe

    monkeypatch.setattr(reader.redis, "pipeline", counting)
    # the lags written: the whole poll's 100 + i, the split poll's 115 + the group's place in its part
    lags = {n: [100 + k, 115 + k % 5] for k, n in enumerate(names)}
    for at in range(0, 10, 3):
        piece = names[at : at + 3]
        assert {g: [s.lag for s in found] for g, found in reader.samples(piece).items()} == {g: lags[g] for g in piece}
        assert all(span[1] >= piece[0] for _, span in reader.decoded)  # the passed ones let go
    assert len(fetched) == len(set(fetched)) == 8
    assert [s.lag for s in reader.samples(["g09"])["g09"]] == [109, 119]
    whole = window.read(redis, 7, since=0)  # every group at once (the alerts' rates of a split poll)
    assert {g: [s.lag for s in found] for g, found in whole.items()} == lags
    assert [s.t for s in whole["g04"]] == [100.0, 115.0]


def _hashes(redis) -> list[str]:
    return [json.loads(raw)["h"].rsplit(":", 1)[-1] for raw in redis.lrange(window.key(7, "window"), 0, -1)]


def test_a_range_is_stored_compressed_and_a_plain_one_written_before_is_still_read(redis):
    import zlib

    names = [f"group-{i:04d}" for i in range(200)]
    queues = {f"orders@broker-a#{q}": [1_000_000 + q, 40 + q] for q in range(8)}
    poll = window.new_id()
    pipe = redis.pipeline()
    window.write_range(pipe, 5, poll, {n: Sample(t=100.0, online=True, lag=348, queues=queues) for n in names})
    window.push(redis, pipe, 5, poll, 100.0)
    pipe.execute()
    ((field, stored),) = redis.hgetall(window.hash_key(5, poll)).items()
    plain = json.loads(zlib.decompress(stored))
    assert sorted(plain) == names and len(stored) < len(json.dumps(plain)) / 4
    # the range as the release before wrote it: plain JSON, beside it in a later poll
    later = window.new_id()
    redis.hset(window.hash_key(5, later), field, json.dumps({"group-0007": sample(115.0, 9)}))
    window.push(redis, redis, 5, later, 115.0)
    found = window.read(redis, 5, since=0)
    assert [(s.t, s.lag) for s in found["group-0007"]] == [(100.0, 348), (115.0, 9)]
    assert found["group-0007"][0].queues == queues and [s.t for s in found["group-0008"]] == [100.0]
