"""The local proxy's start (devstack/proxy.py) without a JVM: the settings that would default to a
cluster called DefaultCluster name the brokers' cluster, and a start that exits is tried again
and said in the log. The real proxy starts and restarts in tests/live/test_rocketmq5.py."""

from __future__ import annotations

import json
import logging

import pytest

from devstack.processes import StartupError
from devstack.proxy import START_ATTEMPTS, LocalProxy

EXITED = "ProxyException: create system broadcast topic DefaultHeartBeatSyncerTopic failed on cluster X"


@pytest.fixture
def proxy(tmp_path, monkeypatch):
    local = LocalProxy(runtime=None, namesrv_addr="127.0.0.1:1", base_dir=tmp_path, cluster="east-cluster")
    monkeypatch.setattr(LocalProxy, "_wait_cluster_route", lambda self: None)
    monkeypatch.setattr("devstack.proxy.time.sleep", lambda seconds: None)
    return local


def test_every_cluster_setting_names_the_brokers_cluster(proxy, monkeypatch):
    monkeypatch.setattr(LocalProxy, "_launch", lambda self, config: None)
    proxy.start()
    config = json.loads((proxy.base_dir / "proxy-0.json").read_text())
    assert config["rocketMQClusterName"] == config["heartbeatSyncerTopicClusterName"] == "east-cluster"


def test_a_start_that_exits_is_tried_again_and_said(proxy, monkeypatch, caplog):
    outcomes = iter([f"INFO starting\nERROR {EXITED}\n", None])
    monkeypatch.setattr(LocalProxy, "_launch", lambda self, config: next(outcomes))
    with caplog.at_level(logging.WARNING, logger="devstack.proxy"):
        assert proxy.start() is proxy
    assert [r.getMessage() for r in caplog.records] == [
        f"proxy-0 exited at start (attempt 1 of {START_ATTEMPTS}), trying again: ERROR {EXITED}"
    ]


def test_a_start_that_keeps_exiting_gives_up_with_the_last_log(proxy, monkeypatch):
    monkeypatch.setattr(LocalProxy, "_launch", lambda self, config: f"ERROR {EXITED}")
    with pytest.raises(StartupError, match=f"exited at start {START_ATTEMPTS} times"):
        proxy.start()
