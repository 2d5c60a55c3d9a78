"""The groups list, the group page and its chart data: access, content, fragments, bad input."""

from __future__ import annotations

import time

import pytest

from consumers.live.config import history_store
from consumers.live.history import history_tables
from consumers.models import Cluster
from consumers.rocketmq import Problem
from tests.support.published import group, publish

PAGES = ["/", "/clusters/", "/groups/", "/groups/east/orders/", "/groups/east/orders/lag.json"]


@pytest.fixture
def east(db, redis, history_dir):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    docs = publish(
        cluster,
        redis,
        [group("orders", lag=40), group("payments", lag=0), group("audit", lag=7, online=False, topic="A")],
        dlq={"payments": 3},
        lag_seconds={"orders": 12.5, "audit": None},
    )
    history_store().append("east", history_tables(docs.values()))
    return cluster


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_users_are_sent_to_the_login_page(client, east, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", PAGES)
def test_a_user_without_a_role_is_refused(client, east, personas, path):
    client.force_login(personas["nobody"])
    assert client.get(path).status_code == 403


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "admin"])
@pytest.mark.parametrize("path", PAGES)
def test_every_role_may_read(client, east, personas, role, path):
    client.force_login(personas[role])
    assert client.get(path).status_code == 200


def test_the_list_shows_each_group_with_its_numbers_and_unknowns(viewer_client, east):
    html = viewer_client.get("/groups/").content.decode()
    assert html.count('data-group="') == 3
    assert "<html" in html  # a full page
    row = html[html.index('data-group="audit"') :].split("</tr>")[0]
    assert ">7<" in row and "STOPPED" in row
    assert 'class="unknown"' in row  # lag seconds could not be measured: not shown as 0
    payments = html[html.index('data-group="payments"') :].split("</tr>")[0]
    assert ">3<" in payments  # DLQ count


def test_htmx_gets_the_table_alone(viewer_client, east):
    response = viewer_client.get("/groups/?q=ord", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<html" not in html and 'id="groups"' in html
    assert 'data-group="orders"' in html and 'data-group="payments"' not in html
    assert 'hx-get="/groups/?q=ord"' in html  # refreshes what it shows


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=PAY", ["payments"]),
        ("topic=A", ["audit"]),
        ("health=STOPPED", ["audit"]),
        ("sort=lag&dir=desc", ["orders", "audit", "payments"]),
        ("sort=lag&dir=asc", ["payments", "audit", "orders"]),
        ("sort=lag_seconds&dir=desc", ["orders", "payments", "audit"]),  # unknown last
        ("sort=lag_seconds&dir=asc", ["payments", "orders", "audit"]),  # unknown last either way
        ("cluster=east&sort=group&dir=asc", ["audit", "orders", "payments"]),
    ],
)
def test_filters_and_sorting(viewer_client, east, query, expected):
    html = viewer_client.get(f"/groups/?{query}").content.decode()
    found = [part.split('"')[0] for part in html.split('data-group="')[1:]]
    assert found == expected


@pytest.mark.parametrize(
    ("query", "listed"),
    [
        ("sort=nonsense", "lag, lag_seconds, tps"),
        ("health=GREAT", "UNKNOWN, OFFSET_EXPIRED"),
        ("page=0", "must be between 1 and 1000000"),
        ("page=\u0663", "write a whole number in digits 0-9"),  # Arabic-Indic 3: not a number here
        ("cluster=west", "(empty), east"),
        ("dir=sideways", "desc, asc"),
        ("order=sideways", "valid parameters: q, cluster, health, topic, sort, dir, page"),
    ],
)
def test_bad_filters_get_a_clear_400_that_lists_the_valid_values(viewer_client, east, query, listed):
    response = viewer_client.get(f"/groups/?{query}")
    assert response.status_code == 400
    assert "Invalid filter" in response.content.decode() and listed in response.content.decode()


def test_the_list_costs_a_fixed_number_of_queries(viewer_client, east, django_assert_num_queries):
    viewer_client.get("/groups/")  # warm the session
    # session, user, the user's groups and grants (their scope), clusters, the firing alerts for the header
    with django_assert_num_queries(6):
        viewer_client.get("/groups/")


def test_the_group_page_shows_every_queue_health_and_clients(viewer_client, east):
    html = viewer_client.get("/groups/east/orders/").content.decode()
    assert html.count('class="queue') == 4
    assert 'data-broker="broker-a" data-queue="0"' in html
    assert 'id="health-state">' in html and "FALLING_BEHIND" not in html
    assert "c1" in html and 'id="lag-chart"' in html
    fragment = viewer_client.get("/groups/east/orders/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'id="group-state"' in fragment


def test_the_group_page_costs_a_fixed_number_of_queries(viewer_client, east, django_assert_num_queries):
    viewer_client.get("/groups/east/orders/")
    with django_assert_num_queries(7):  # session, user, groups and grants (the scope), the cluster, firing alerts (2)
        viewer_client.get("/groups/east/orders/")


def test_unknown_groups_and_clusters_are_404(viewer_client, east):
    assert viewer_client.get("/groups/east/nope/").status_code == 404
    assert viewer_client.get("/groups/west/orders/").status_code == 404


def test_stale_data_says_why_and_how_old(viewer_client, east, redis):
    failed = group("orders", problems=[Problem("group", "orders", "DeadlineExceeded: deadline passed", "x")])
    publish(east, redis, [failed])
    html = viewer_client.get("/groups/east/orders/").content.decode()
    assert "Not read in the last poll: DeadlineExceeded: deadline passed" in html


def test_a_group_whose_clients_are_unknown_says_so_and_why_never_no_client_online(viewer_client, east, redis):
    unknown = group("shipments", online=False)
    unknown.online = None  # its clients may be on the proxy that did not answer
    unknown.problems = [Problem("proxy", "127.0.0.1:8081", "ConnectError: connection refused", "ConnectError")]
    publish(east, redis, [unknown, group("audit", online=False)])
    html = viewer_client.get("/groups/east/shipments/").content.decode()
    why = "proxy 127.0.0.1:8081 could not be read (ConnectError: connection refused)"
    assert "No client online" not in html
    assert f'<p class="unknown" id="clients-unknown">Unknown whether a client is online: {why}' in html
    assert f'Clients<b><span class="unknown" title="{why}' in html  # the header's tooltip says why too
    offline = viewer_client.get("/groups/east/audit/").content.decode()
    assert "No client online." in offline and 'id="clients-unknown"' not in offline


def test_the_chart_data_comes_from_the_history(viewer_client, east):
    figure = viewer_client.get("/groups/east/orders/lag.json?hours=1").json()
    assert figure["points"] == 1
    assert figure["data"][0]["y"] == [40] and figure["data"][2]["y"] == [12.5]
    assert viewer_client.get("/groups/east/orders/lag.json?hours=-3").status_code == 400


def test_the_clusters_page_shows_brokers_and_a_failed_poll(viewer_client, east, redis):
    html = viewer_client.get("/clusters/").content.decode()
    assert "V5_3_3" in html and "127.0.0.1:10911" in html
    from consumers.live import snapshots

    meta = snapshots.read_meta(redis, east.pk)
    meta.status, meta.error, meta.polled_at = "failed", "ConnectError: no name server answered", time.time()
    snapshots.write_meta(redis, east.pk, meta)
    html = viewer_client.get("/clusters/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in html
    assert "Last poll failed: ConnectError: no name server answered" in html


def test_after_redis_lost_the_snapshot_pages_wait_for_a_poll_instead_of_404_or_never_polled(viewer_client, east, redis):
    """Redis restarted empty: the cluster's brokers are on record in the database (a poll found
    them), so its missing snapshot is Redis's loss, not a cluster never polled or a group gone."""
    import datetime as dt

    from consumers.models import KnownBroker

    seen = dt.datetime(2026, 11, 26, 6, 0, 5, tzinfo=dt.UTC)
    KnownBroker.objects.create(
        cluster=east, name="broker-a", address="127.0.0.1:10911", first_seen=seen, last_seen=seen
    )
    redis.flushdb()
    for path in ("/groups/east/orders/", "/api/groups/east/orders/"):
        response = viewer_client.get(path)
        text = response.content.decode()
        assert response.status_code == 503 and response["Retry-After"] == str(east.poll_interval), path
        assert "Waiting for the first poll after Redis returned" in text and "2026-11-26 06:00:05 UTC" in text, path
    clusters = viewer_client.get("/clusters/").content.decode()
    assert "awaiting poll" in clusters and "never polled" not in clusters and 'id="awaiting-east"' in clusters
    assert viewer_client.get("/api/clusters/").json()["clusters"][0]["state"] == "awaiting poll"
    KnownBroker.objects.all().delete()  # a cluster no poll ever read: still "never polled", and a 404
    assert viewer_client.get("/groups/east/orders/").status_code == 404
    assert "never polled" in viewer_client.get("/clusters/").content.decode()
