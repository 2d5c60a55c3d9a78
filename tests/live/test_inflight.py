"""POP messages in flight from brokers' metrics pages (hand-written Prometheus text)."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from consumers.live import inflight

PAGE_A = """# HELP rocketmq_consumer_inflight_messages
# TYPE rocketmq_consumer_inflight_messages gauge
rocketmq_consumer_inflight_messages{cluster="c",consumer_group="G-slow",is_retry="false",topic="T"} 12.0
rocketmq_consumer_inflight_messages{cluster="c",consumer_group="G-slow",is_retry="true",is_system="false",topic="T"} 3.0
rocketmq_consumer_inflight_messages{cluster="c",consumer_group="G-ok",is_retry="false",is_system="false",topic="T"} 0.0
# TYPE rocketmq_consumer_ready_messages gauge
rocketmq_consumer_ready_messages{cluster="c",consumer_group="G-slow",is_retry="false",is_system="false",topic="T"} 99.0
"""
PAGE_B = """# TYPE rocketmq_consumer_inflight_messages gauge
rocketmq_consumer_inflight_messages{cluster="c",consumer_group="G-slow",is_retry="false",topic="U"} 5.0
"""


def test_a_page_sums_each_groups_topics_and_retries():
    assert inflight.parse(PAGE_A) == {"G-slow": 15, "G-ok": 0}


def test_urls_by_name_or_for_every_broker_with_its_host():
    masters = {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"}
    assert inflight.metrics_urls("*=http://{host}:5557/metrics", masters) == {
        "broker-a": "http://10.0.0.1:5557/metrics",
        "broker-b": "http://10.0.0.2:5557/metrics",
    }
    assert inflight.metrics_urls("broker-b=http://m:1/metrics", masters) == {"broker-b": "http://m:1/metrics"}


def serve(pages: dict[str, str]) -> HTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages.get(self.path)
            if body is None:
                self.send_error(500)
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_brokers_are_summed_and_a_failing_one_is_named():
    server = serve({"/a": PAGE_A, "/b": PAGE_B})
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        totals, errors = asyncio.run(inflight.read({"broker-a": f"{base}/a", "broker-b": f"{base}/b"}, timeout=2))
        assert (totals, errors) == ({"G-slow": 20, "G-ok": 0}, {})
        totals, errors = asyncio.run(inflight.read({"broker-a": f"{base}/a", "broker-b": f"{base}/x"}, timeout=2))
        assert set(errors) == {"broker-b"} and "500" in errors["broker-b"]
    finally:
        server.shutdown()
