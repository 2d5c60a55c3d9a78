"""The groups list's rows kept between polls (consumers/live/rows.py): made once a poll, sorted
once an order, judged stale on time, made again by the warming thread when a poll lands, and a
filtered or scoped page the same as sorting what passes."""

from __future__ import annotations

import json

import pytest

from consumers.identity import Rule, Scope
from consumers.live import rows, selectors, snapshots
from tests.support.published import group, publish


@pytest.fixture
def cluster(db):
    from consumers.models import Cluster

    return Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876", poll_interval=15)


def _names(found) -> list[str]:
    return [r.summary["group"] for r in found]


def test_rows_and_orders_are_made_once_a_poll(redis, cluster, monkeypatch):
    publish(cluster, redis, [group(f"g-{i}", lag=i) for i in range(5)])
    sorts = []
    real = rows.ordered
    monkeypatch.setattr(rows, "ordered", lambda found, sort, **kw: sorts.append(sort) or real(found, sort, **kw))
    first = rows.current(redis, [cluster])
    assert rows.current(redis, [cluster])[0] is first[0]
    by_lag = rows.in_order(first, "lag", True)
    assert rows.in_order(rows.current(redis, [cluster]), "lag", True) is by_lag and sorts == ["lag"]
    assert _names(by_lag) == ["g-4", "g-3", "g-2", "g-1", "g-0"]
    publish(cluster, redis, [group(f"g-{i}", lag=10 - i) for i in range(5)])  # the next poll
    again = rows.current(redis, [cluster])
    assert again[0] is not first[0]
    assert _names(rows.in_order(again, "lag", True)) == ["g-0", "g-1", "g-2", "g-3", "g-4"] and sorts == ["lag"] * 2


def test_an_unchanged_index_is_not_read_again(redis, cluster, monkeypatch):
    publish(cluster, redis, [group("orders", lag=1)])
    snapshots.read_index(redis, [cluster.pk])
    decoded = []
    real = json.loads
    monkeypatch.setattr(snapshots.json, "loads", lambda raw: decoded.append(len(raw)) or real(raw))
    for _ in range(3):
        assert snapshots.read_index(redis, [cluster.pk])[cluster.pk][0]["lag"] == 1
    assert decoded == []
    # a writer without versions (an older release) replacing the index is still seen
    index_key = snapshots.key(cluster.pk, "index")
    redis.set(index_key, json.dumps([{"group": "orders", "lag": 12}]))
    assert snapshots.read_index(redis, [cluster.pk])[cluster.pk] == [{"group": "orders", "lag": 12}]
    redis.delete(index_key)
    assert snapshots.read_index(redis, [cluster.pk])[cluster.pk] == []


def test_kept_rows_turn_stale_when_their_data_is_older_than_the_expected_refresh(redis, cluster, monkeypatch):
    documents = publish(cluster, redis, [group("orders", lag=3)])
    [kept] = rows.current(redis, [cluster])
    assert not kept.rows[0].stale and kept.health_counts == {documents["orders"].health["state"]: 1}
    later = kept.valid_until + 1
    monkeypatch.setattr(rows.time, "time", lambda: later)
    [aged] = rows.current(redis, [cluster])
    assert aged is not kept and aged.rows[0].stale and aged.health_counts == {"UNKNOWN": 1}
    monkeypatch.setattr(selectors.time, "time", lambda: later)
    [row] = selectors.group_page(redis, clusters=[cluster]).rows
    assert row.stale and "not refreshed for" in row.summary["stale_reason"]
    assert row.age == pytest.approx(later - documents["orders"].as_of)  # the age when shown, not when kept


@pytest.mark.parametrize("sort", sorted(rows.SORT_KEYS))
@pytest.mark.parametrize("descending", [True, False])
def test_a_filtered_scoped_page_is_what_sorting_the_rows_that_pass_gives(redis, db, sort, descending):
    from consumers.models import Cluster

    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    west = Cluster.objects.create(name="west", namesrv_addrs="127.0.0.1:9877")
    for c, shift in ((east, 0), (west, 3)):
        publish(c, redis, [group(f"pay-{i}" if i % 2 else f"ops-{i}", lag=(i * 7 + shift) % 11, topic=f"T-{i % 3}",
                                 online=i % 5 != 0) for i in range(24)])  # fmt: skip
    scope = Scope((Rule("viewer", ("*",), ("pay-*",)), Rule("viewer", ("west",), ("ops-1*",))))
    page = selectors.group_page(redis, clusters=[east, west], topic="T-1", sort=sort, descending=descending,
                                per_page=5, page=2, scope=scope)  # fmt: skip
    everything = selectors.group_rows(redis, [east, west])
    passing = [
        r for r in everything
        if "T-1" in r.summary["topics"] and (r.summary["group"].startswith("pay-")
                                             or (r.cluster.name == "west" and r.summary["group"].startswith("ops-1")))
    ]  # fmt: skip
    expected = rows.ordered(passing, sort, descending=descending)
    assert page.total == len(passing) > 5
    assert [(r.cluster.name, r.summary["group"]) for r in page.rows] == [
        (r.cluster.name, r.summary["group"]) for r in expected[5:10]
    ]


def test_the_warming_thread_makes_the_new_polls_rows_and_orders_before_a_request(redis, cluster, monkeypatch):
    publish(cluster, redis, [group(f"g-{i}", lag=i) for i in range(4)])
    selectors.group_page(redis, clusters=[cluster], sort="lag")  # asked once: what warming keeps
    selectors.group_page(redis, clusters=[cluster], sort="group", descending=False)
    assert rows.warm(redis) == 0  # nothing new
    publish(cluster, redis, [group(f"g-{i}", lag=9 - i) for i in range(4)])
    assert rows.warm(redis) == 2
    sorts = []
    monkeypatch.setattr(rows, "ordered", lambda *a, **kw: sorts.append(a) or [])
    page = selectors.group_page(redis, clusters=[cluster], sort="lag")
    assert sorts == [] and _names(page.rows) == ["g-0", "g-1", "g-2", "g-3"]  # made by the warming, not here


def test_each_web_process_starts_one_warming_thread(monkeypatch):
    import threading

    from dashboard import servers

    monkeypatch.setattr(rows, "_warming_pid", None)
    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name))
    assert rows.keep_warm(0, lambda: None) is None  # 0: never
    assert rows.keep_warm(0.5, lambda: None) is not None and rows.keep_warm(0.5, lambda: None) is None
    assert started == ["rows-warming"]
    assert servers.web_options(_serve_args())["post_worker_init"] is servers._keep_rows_warm


def _serve_args():
    from argparse import Namespace

    return Namespace(bind="127.0.0.1:0", workers=1, threads=1, graceful_timeout=5, access_logfile="", prog="x")


def test_while_warming_runs_a_request_takes_the_previous_polls_rows_and_wakes_it(redis, cluster, monkeypatch):
    """A request that comes as a poll lands does not decode and sort 50,000 groups itself: it shows
    the poll before (still within its staleness) and the warming thread makes the new one."""
    publish(cluster, redis, [group(f"g-{i}", lag=i) for i in range(3)])
    before = _names(selectors.group_page(redis, clusters=[cluster]).rows)
    monkeypatch.setattr(rows, "warming", lambda: True)
    rows._wake.clear()
    publish(cluster, redis, [group(f"g-{i}", lag=9 - i) for i in range(3)])
    made = []
    real = rows._made
    monkeypatch.setattr(rows, "_made", lambda *a: made.append(a[0].name) or real(*a))
    assert _names(selectors.group_page(redis, clusters=[cluster]).rows) == before == ["g-2", "g-1", "g-0"]
    assert rows._wake.is_set() and made == []
    assert rows.warm(redis) == 1 and made == ["east"]
    assert _names(selectors.group_page(redis, clusters=[cluster]).rows) == ["g-0", "g-1", "g-2"]
    monkeypatch.setattr(rows, "warming", lambda: False)  # without the thread: the newest, made by the request
    publish(cluster, redis, [group(f"g-{i}", lag=i) for i in range(3)])
    assert _names(selectors.group_page(redis, clusters=[cluster]).rows) == ["g-2", "g-1", "g-0"]
