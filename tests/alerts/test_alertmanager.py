"""A real Alertmanager (Debian's prometheus-alertmanager) receives the console's alerts: it
lists the firing one with its labels, routes it to its own webhook, and sends the resolution
once the console says it ended."""

from __future__ import annotations

import datetime as dt
import time

from consumers.alerts import channels, delivery
from consumers.alerts.models import Alert
from devstack.alertmanager import LocalAlertmanager
from tests.alerts.conftest import make_channel, make_rule
from tests.support.published import group, publish
from tests.support.receivers import HttpReceiver


def _wait(predicate, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_alertmanager_routes_the_firing_and_the_resolution(east, redis, queued):
    routed = HttpReceiver()
    manager = LocalAlertmanager(webhook_url=routed.url)
    try:
        make_rule(make_channel(kind="alertmanager", url=manager.url), severity="critical")
        publish(east, redis, [group("orders", lag=8, online=False)])
        assert delivery.deliver(queued[0]) == "sent"
        [listed] = _wait(manager.alerts, "the alert in Alertmanager")
        assert listed["labels"] == {"alertname": "stopped", "cluster": "east", "group": "orders", "scope": "group",
                                    "severity": "critical", "source": "rocketmq-console"}  # fmt: skip
        assert listed["status"]["state"] == "active"
        assert "no client is online" in listed["annotations"]["evidence"]
        notified = _wait(lambda: [m for m in routed.json() if m["status"] == "firing"], "Alertmanager's webhook")
        assert notified[0]["alerts"][0]["labels"]["group"] == "orders"
        # Alertmanager drops what is not posted again before its endsAt: the minute's upkeep does
        first_end = dt.datetime.fromisoformat(listed["endsAt"])
        assert first_end > dt.datetime.now(dt.UTC) + dt.timedelta(seconds=240)
        time.sleep(1.1)
        assert channels.refresh_alertmanagers() == 1
        [again] = manager.alerts()
        assert dt.datetime.fromisoformat(again["endsAt"]) > first_end and again["status"]["state"] == "active"

        publish(east, redis, [group("orders", lag=0, online=True)])
        assert Alert.objects.get().state == "resolved"
        assert delivery.deliver(queued[1]) == "sent"
        _wait(lambda: [m for m in routed.json() if m["status"] == "resolved"], "the resolution routed")
        _wait(lambda: all(a["status"]["state"] != "active" for a in manager.alerts()), "the alert no longer active")
    finally:
        manager.stop()
        routed.stop()
