"""The RocketMQ 5 view in headless Chromium (DEBUG off, as production and the demo run): a gRPC
group's page and the groups list with their consumption, through a real proxy and the official
5.x SDK."""

from __future__ import annotations

import pytest

from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from devstack.proxy import LocalProxy
from tests.conftest import SESSION_DIR, in_thread
from tests.live.test_rocketmq5 import grpc_group
from tests.test_browser import log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


@pytest.fixture(scope="module")
def proxy(rmq_runtime, rocketmq):
    local = LocalProxy(
        rmq_runtime, rocketmq.namesrv_addr, SESSION_DIR / "proxy-browser", cluster=rocketmq.cluster
    ).start()
    yield local
    local.stop(grace=2)  # throwaway: no need to wait for a graceful shutdown


def test_a_grpc_groups_page_and_the_groups_list_show_how_it_consumes(
    page, live_server, browser, redis, history_dir, namesrv, rocketmq, proxy, mqadmin, traffic, names, personas,
    settings,
):  # fmt: skip
    topic, group = names.topic("grpc-ui"), names.group("grpc-ui")
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2", "-a", "+message.type=NORMAL")
    in_thread(grpc_group, mqadmin, namesrv, group, topic)
    consumer = traffic.grpc_consume(proxy.grpc_endpoint, group, topic, kind="push")
    traffic.produce(topic, 10)
    consumer.wait_counts(lambda c: c["acked"] >= 10, 60, "acked 10")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv, proxy_addrs=proxy.remoting_address,
                                     broker_metrics=rocketmq.metrics_urls)  # fmt: skip
    in_thread(poll_cluster, cluster)
    log_in(page, live_server.url, "viewer", f"/groups/?q={group}")
    row = page.locator(f'tr[data-group="{group}"]')
    assert row.locator("td.consumption").inner_text() == "gRPC PushConsumer (POP, via proxy)"
    row.locator("a").first.click()
    page.wait_for_url(f"**/groups/local/{group}/")
    assert page.locator("#consumption").inner_text() == "gRPC PushConsumer (POP, via proxy)"
    assert page.locator("#health-state").inner_text() != "STOPPED"
    assert page.locator("#in-flight").inner_text() == "0"  # all acked, from the brokers' metrics
    connections = page.locator("#connections tbody tr")
    assert connections.count() == 1 and "proxy (gRPC)" in connections.first.inner_text()
    assert consumer.client_id in connections.first.inner_text()
    page.goto(live_server.url + "/clusters/")
    assert page.locator(f'tr.proxy[data-proxy="{proxy.remoting_address}"][data-state="ok"]').count() == 1
    assert page.evaluate("window.__csp || []") == []
    consumer.stop()


def test_a_remoting_pop_fifo_groups_page_shows_its_pops_and_badge_and_no_held_queue_warning(
    page, live_server, browser, redis, history_dir, namesrv, mqadmin, traffic, names, personas, settings
):
    topic, group = names.topic("rpop-ui"), names.group("rpop-ui")
    mqadmin.run("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", group, "-o", "true")
    mqadmin.run("setConsumeMode", "-c", "DefaultCluster", "-t", topic, "-g", group, "-m", "POP", "-q", "8")
    consumer = traffic.consume(group, topic, pop=True)
    traffic.produce(topic, 10)
    consumer.wait_acked(10, 90)
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    in_thread(poll_cluster, cluster)
    log_in(page, live_server.url, "viewer", f"/groups/?q={group}")
    row = page.locator(f'tr[data-group="{group}"]')
    assert row.locator("td.consumption").inner_text().startswith("POP (remoting)")
    assert row.locator("td.consumption .badge.fifo").inner_text() == "FIFO"
    row.locator("a").first.click()
    page.wait_for_url(f"**/groups/local/{group}/")
    assert page.locator("#consumption").inner_text() == "POP (remoting)" and page.locator("#fifo").is_visible()
    pops = page.locator("#pops tbody tr")
    assert pops.count() >= 1 and consumer.client_id in pops.first.inner_text()
    kinds = page.locator(".diagnostics li").evaluate_all("items => items.map(i => i.dataset.kind)")
    assert "assigned-by-broker" in kinds and "pop-drops-failures" in kinds and "unheld-queues" not in kinds
    assert "nobody has popped" in page.locator("#lag-seconds-measures").inner_text()
    assert page.evaluate("window.__csp || []") == []
    consumer.stop()
