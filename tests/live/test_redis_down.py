"""Redis stops answering: pages that read it answer 503 with the console's page and a banner
saying since when and why, the API a JSON 503; the pages that do not need Redis keep working;
when Redis is back, everything answers 200 again. Against a real redis-server of the test's own
(not the session's), stopped and started again."""

from __future__ import annotations

import re
import time

import pytest

from consumers.jobs import redis_client
from consumers.models import Cluster
from devstack.processes import free_port
from devstack.redis import LocalRedis
from tests.support.published import group, publish

LIVE_PAGES = ["/", "/clusters/", "/groups/", "/groups/east/orders/", "/dlq/"]
LIVE_API = ["/api/clusters/", "/api/groups/", "/api/groups/east/orders/"]
WITHOUT_REDIS = ["/changes/", "/audit/", "/account/tokens/", "/reports/", "/stats/"]
BANNER = re.compile(
    r'id="redis-outage"[^>]*>Live state unavailable since (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+): '
    r"Redis at 127\.0\.0\.1:(\d+) does not answer \((.+?)\)</p>"
)


@pytest.fixture(autouse=True)
def no_outage_before_or_after():
    redis_client.note_answered()
    yield
    redis_client.note_answered()


@pytest.fixture
def private_redis(tmp_path, settings):
    server = LocalRedis(tmp_path / "redis")
    settings.REDIS_URL = server.url
    yield server
    server.stop()


@pytest.fixture
def east(db, private_redis):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    publish(cluster, redis_client.get_redis(), [group("orders", lag=40), group("payments", lag=0)])
    return cluster


def test_redis_down_then_back(east, private_redis, personas, viewer_client, tmp_path):
    for path in LIVE_PAGES + LIVE_API + WITHOUT_REDIS:
        assert viewer_client.get(path).status_code == 200, path
    port = private_redis.port
    private_redis.stop()

    since = set()
    for path in LIVE_PAGES:
        started = time.monotonic()
        response = viewer_client.get(path)
        assert time.monotonic() - started < 2, path  # a refused connection fails the page at once
        html = response.content.decode()
        assert response.status_code == 503, path
        assert "<html" in html and "<h1>Live state unavailable</h1>" in html and 'href="/changes/"' in html, path
        found = BANNER.search(html)
        assert found and int(found[2]) == port and "Connection refused" in found[3], html
        since.add(found[1])
    assert len(since) == 1  # every page says the same "since": the first failure's time
    (since,) = since

    for path in LIVE_API:
        response = viewer_client.get(path)
        assert response.status_code == 503 and response["Content-Type"] == "application/json", path
        body = response.json()
        assert set(body) == {"error", "status", "unavailable_since"} and body["status"] == 503, body
        assert body["error"].startswith(f"Live state unavailable since {since}: Redis at 127.0.0.1:{port} does not")

    for path in WITHOUT_REDIS:
        response = viewer_client.get(path)
        assert response.status_code == 200 and b"redis-outage" not in response.content, path
    viewer_client.logout()
    assert viewer_client.get("/login/").status_code == 200
    viewer_client.force_login(personas["viewer"])

    back = LocalRedis(tmp_path / "redis", port)  # started again, empty: tests run it without persistence
    try:
        for path in ["/", "/clusters/", "/groups/", "/dlq/", "/api/clusters/", "/api/groups/"]:
            response = viewer_client.get(path)
            assert response.status_code == 200 and b"redis-outage" not in response.content, path
        assert redis_client.current_outage() is None
    finally:
        back.stop()


def test_the_banner_never_shows_the_password(db, settings, viewer_client):
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")  # with no cluster no page reads Redis
    port = free_port()  # nothing listens there
    settings.REDIS_URL = f"redis://:a-secret-password@127.0.0.1:{port}/0"
    html = viewer_client.get("/clusters/").content.decode()
    api = viewer_client.get("/api/clusters/").content.decode()
    assert f"Redis at 127.0.0.1:{port} does not answer" in html and "a-secret-password" not in html + api
