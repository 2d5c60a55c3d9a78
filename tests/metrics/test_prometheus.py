"""A real Prometheus scraping /metrics: the lag it stores for groups with traffic from the Java
harness is the console API's at the same poll; the shipped rules pass promtool and every metric
the rules and the Grafana dashboard use is one the console exports."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
from django.conf import settings

from consumers.identity import create_token
from consumers.live.poll import poll_cluster
from consumers.metrics.views import exposition
from consumers.models import Cluster
from devstack.prometheus import LocalPrometheus
from tests.conftest import in_thread
from tests.support.published import group, publish

RULES = settings.BASE_DIR / "docs" / "prometheus" / "rules.yml"
DASHBOARD = settings.BASE_DIR / "docs" / "grafana" / "rocketmq-console.json"
NAME = re.compile(r"\brocketmq_console_[a-z_]+\b")


def test_the_shipped_rules_pass_promtool():
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 13 rules found" in checked.stdout


DRAIN_RULE_TESTS = """
rule_files: [%(rules)s]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'rocketmq_console_group_drain_seconds{cluster="east",group="never"}'
        values: '%(infinite)s'
      - series: 'rocketmq_console_group_lag_messages{cluster="east",group="never"}'
        values: '500+0x20'
      - series: 'rocketmq_console_group_drain_seconds{cluster="east",group="slow"}'
        values: '9000+0x20'
      - series: 'rocketmq_console_group_lag_messages{cluster="east",group="slow"}'
        values: '500+0x20'
      - series: 'rocketmq_console_group_drain_seconds{cluster="east",group="quick"}'
        values: '60+0x20'
      - series: 'rocketmq_console_group_lag_messages{cluster="east",group="quick"}'
        values: '5+0x20'
      - series: 'rocketmq_console_group_retention_loss_messages{cluster="east",group="slow"}'
        values: '0 0 0 0 0 1200+0x15'
    alert_rule_test:
      - eval_time: 14m
        alertname: RocketMQGroupNotDraining
        exp_alerts: []
      - eval_time: 16m
        alertname: RocketMQGroupNotDraining
        exp_alerts:
          - exp_labels: {severity: warning, cluster: east, group: never}
            exp_annotations: {summary: "east/never: the lag does not shrink at the current rates"}
      - eval_time: 11m
        alertname: RocketMQGroupDrainSlow
        exp_alerts:
          - exp_labels: {severity: warning, cluster: east, group: slow}
            exp_annotations: {summary: "east/slow drains in about 2h 30m 0s"}
      - eval_time: 14m
        alertname: RocketMQGroupWillLoseMessages
        exp_alerts: []
      - eval_time: 16m
        alertname: RocketMQGroupWillLoseMessages
        exp_alerts:
          - exp_labels: {severity: critical, cluster: east, group: slow}
            exp_annotations:
              summary: "east/slow will lose about 1200 messages to the brokers' retention before reading them"
"""


def test_the_drain_and_retention_alerts_fire_once_their_conditions_have_held_long_enough(tmp_path):
    # promtool's own rule unit test: the input series by hand, the alerts expected at each time
    tests = tmp_path / "drain_tests.yml"
    tests.write_text(DRAIN_RULE_TESTS % {"rules": RULES, "infinite": " ".join(["+Inf"] * 21)})  # no "x" form for it
    checked = subprocess.run(["promtool", "test", "rules", str(tests)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout + checked.stderr


def test_the_rules_and_the_dashboard_use_only_exported_metrics(db, redis, settings):
    settings.METRICS_PER_QUEUE = True
    publish(Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876"), redis, [group("orders", lag=4)])
    exported = {line.split()[2] for line in exposition().decode().splitlines() if line.startswith("# TYPE")}
    exprs = [p["targets"][0]["expr"] for p in json.loads(DASHBOARD.read_text())["panels"]]
    used = set(NAME.findall(RULES.read_text())) | {n for e in exprs for n in NAME.findall(e)}
    assert used and used <= exported, used - exported


@pytest.mark.broker
def test_prometheus_stores_the_lag_the_api_gives(live_server, redis, history_dir, namesrv, settled, personas, client):
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    in_thread(poll_cluster, cluster)  # one poll: the API and every scrape read the same one
    _, secret = create_token(personas["viewer"], name="prometheus", days=1)
    api = client.get("/api/groups/?cluster=local", HTTP_AUTHORIZATION=f"Bearer {secret}").json()["groups"]
    expected = {g["group"]: g["lag"] for g in api if g["group"] in {c.group for c in settled.all}}
    assert len(expected) == 4 and any(expected.values())
    prometheus = LocalPrometheus(target=live_server.url.removeprefix("http://"), token=secret, rules=RULES)
    try:
        deadline = time.monotonic() + 60
        stored = {}
        while time.monotonic() < deadline and stored.keys() != expected.keys():
            time.sleep(1)
            stored = {r["metric"]["group"]: int(float(r["value"][1]))
                      for r in prometheus.query('rocketmq_console_group_lag_messages{cluster="local"}')
                      if r["metric"]["group"] in expected}  # fmt: skip
        assert stored == expected
        up = prometheus.query('up{job="rocketmq-console"}')
        assert [r["value"][1] for r in up] == ["1"]
        rules = [r for g in prometheus.api("rules")["groups"] for r in g["rules"]]
        assert len(rules) == 13 and all(r["health"] != "err" for r in rules)
    finally:
        prometheus.stop()
