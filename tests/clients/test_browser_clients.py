"""The clients page and a capture of stacks in headless Chromium (DEBUG off, as production runs):
an operator goes from a stuck group's page to its clients, captures their stacks, and reads where
the consume threads are, against the real cluster and the Java harness."""

from __future__ import annotations

import pytest

from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from tests.clients.test_clients_on_broker import BLOCKED_IN
from tests.conftest import in_thread
from tests.support.scenarios import wait
from tests.test_browser import log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_an_operator_reads_a_stuck_groups_clients_and_captures_their_stacks(
    page, live_server, browser, redis, history_dir, namesrv, create_topic, traffic, names, personas
):
    topic, group = create_topic(names.topic("ui-stacks"), queues=2), names.group("ui-stacks")
    run = traffic.consume(group, topic, mode="stalled", threads=2)
    traffic.produce(topic, 10)
    wait(lambda: any(d["result"] == "held" for d in run.deliveries), 90, "the listener blocked")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    in_thread(poll_cluster, cluster)
    log_in(page, live_server.url, "operator", f"/groups/local/{group}/")
    page.locator("#clients-link").click()
    page.wait_for_url(f"**/groups/local/{group}/clients/")
    assert page.locator(f'[data-client="{run.client_id}"]').count() == 1
    page.locator("#capture").click()
    page.wait_for_selector("#stack-clusters")
    first = page.locator("#stack-clusters li").first.inner_text()
    assert "1 consume thread on 1 of 1 client(s), WAITING, in" in first and BLOCKED_IN in first, first
    assert page.evaluate("window.__csp || []") == []
    run.release()
