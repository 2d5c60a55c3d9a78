from __future__ import annotations

import pytest

from consumers.alerts.models import AlertRule, Channel
from consumers.models import Cluster


@pytest.fixture
def queued(monkeypatch, transactional_db):
    """Deliveries the evaluation queued once its transaction committed (so: a transactional
    database); no worker here: the tests send them themselves."""
    pks: list[int] = []
    monkeypatch.setattr("consumers.alerts.tasks.deliver.delay", pks.append)
    return pks


@pytest.fixture
def east(db):
    return Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")


def make_rule(*channels, name="stopped", condition="state", states=("STOPPED",), **fields) -> AlertRule:
    rule = AlertRule.objects.create(name=name, condition=condition, states=list(states), **fields)
    rule.channels.set(channels)
    return rule


def make_channel(name="hook", kind="webhook", url="http://127.0.0.1:9/hook", **fields) -> Channel:
    return Channel.objects.create(name=name, kind=kind, url=url, **fields)
