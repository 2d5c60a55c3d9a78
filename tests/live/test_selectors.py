"""The list's order: the top rows the overview takes without sorting every group are the same
rows, in the same order, as the head of the fully sorted list."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from consumers.live.selectors import GroupRow, _ordered

values = st.one_of(st.none(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False))


@given(
    rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.sampled_from(["east", "west"]), values,
                            values), unique_by=lambda r: r[:2], max_size=10),
    sort=st.sampled_from(["lag", "lag_seconds", "group"]),
    descending=st.booleans(),
    first=st.integers(0, 12),
)  # fmt: skip
def test_the_first_rows_are_the_head_of_the_full_order(rows, sort, descending, first):
    grouped = [
        GroupRow(SimpleNamespace(name=cluster), {"group": group, "lag": lag, "lag_seconds": seconds}, 1.0, False)
        for group, cluster, lag, seconds in rows
    ]
    full = _ordered(grouped, sort, descending=descending)
    assert _ordered(grouped, sort, descending=descending, first=first) == full[:first]


def test_a_page_reads_whole_summaries_only_for_the_rows_it_shows(redis, db, monkeypatch):
    """10,000 groups' summaries decoded after each poll were most of the list's first request:
    the list sorts and filters the index, then reads the shown rows' summaries."""
    from consumers.live import selectors, snapshots
    from consumers.models import Cluster
    from tests.support.published import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    documents = publish(cluster, redis, [group(f"g-{i:02d}", lag=i, topic=f"T-{i % 3}") for i in range(30)])
    asked = []
    real = snapshots.read_summaries
    monkeypatch.setattr(
        snapshots, "read_summaries", lambda r, pk, groups=None: asked.append(groups) or real(r, pk, groups)
    )
    page = selectors.group_page(redis, clusters=[cluster], topic="T-1", sort="lag", per_page=4, page=2)
    expected = [f"g-{i:02d}" for i in (16, 13, 10, 7)]  # T-1: 28, 25, ... by lag, second page of 4
    assert [r.summary["group"] for r in page.rows] == expected and page.total == 10
    assert asked == [expected]
    assert [r.summary for r in page.rows] == [documents[g].summary() for g in expected]  # whole: clients, topic lags
    home = selectors.overview(redis, [cluster], top=3)
    assert [r.summary for r in home.top] == [documents[g].summary() for g in ("g-29", "g-28", "g-27")]
    assert home.total == 30 and sum(n for _, n in home.health_counts) == 30


def test_a_stale_row_keeps_its_unknown_health_when_its_whole_summary_is_read(redis, db):
    import time
    from unittest import mock

    from consumers.live import selectors
    from consumers.models import Cluster
    from tests.support.published import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876", poll_interval=15)
    publish(cluster, redis, [group("orders", lag=5)])
    later = time.time() + 3600  # an hour without a poll
    with mock.patch("consumers.live.selectors.time.time", return_value=later):
        [row] = selectors.group_page(redis, clusters=[cluster]).rows
    assert row.stale and row.health == "UNKNOWN" and row.summary["stale"] is True
    assert "stale data" in row.summary["health"]["findings"][0]["evidence"]
    assert row.summary["clients"] == 1  # the rest is the whole summary


def test_a_large_clusters_groups_stay_fresh_through_its_longer_poll(redis, db, settings):
    import time
    from unittest import mock

    from consumers.live import selectors, snapshots
    from consumers.models import Cluster
    from tests.support.published import group, publish

    settings.ROCKETMQ_POLL_DEADLINE, settings.ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = 12, 1.0
    settings.STALE_MARGIN_SECONDS = 5
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876", poll_interval=15)
    publish(cluster, redis, [group("orders", lag=5)])
    later = time.time() + 45  # past 15 + 12 + 5, within 15 + 40 + 5
    with mock.patch("consumers.live.selectors.time.time", return_value=later):
        assert selectors.group_rows(redis, [cluster])[0].stale
        meta = snapshots.read_meta(redis, cluster.pk)
        meta.groups = 40_000  # as if its last poll had seen 40,000 groups
        snapshots.write_meta(redis, cluster.pk, meta)
        [row] = selectors.group_rows(redis, [cluster])
        assert not row.stale and selectors.cluster_states(redis, [cluster])[0].state == "ok"


def test_only_the_shown_stale_rows_are_given_their_reason(redis, db, monkeypatch):
    """Judging why each of 10,000 aged rows is stale was most of the list's time: the list
    sorts and counts them as UNKNOWN and writes the reason into the rows it shows."""
    import time
    from unittest import mock

    from consumers.live import selectors
    from consumers.models import Cluster
    from tests.support.published import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876", poll_interval=15)
    publish(cluster, redis, [group(f"g-{i:02d}", lag=i) for i in range(30)])
    judged = []
    real = selectors.freshness
    monkeypatch.setattr(selectors, "freshness", lambda *a, **k: judged.append(a) or real(*a, **k))
    with mock.patch("consumers.live.selectors.time.time", return_value=time.time() + 3600):
        page = selectors.group_page(redis, clusters=[cluster], per_page=4, health="UNKNOWN")
        home = selectors.overview(redis, [cluster], top=3)
    assert page.total == 30 and len(judged) == 4 + 3
    assert all(r.summary["stale"] and "not refreshed for" in r.summary["stale_reason"] for r in page.rows + home.top)
    assert home.health_counts == [("UNKNOWN", 30)]
