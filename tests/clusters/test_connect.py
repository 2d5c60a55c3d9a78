"""The one way to reach a cluster: configuration from settings and the cluster's row, a total
deadline, and read-only clusters refusing mutations before any connection is made."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from consumers.clusters.connect import ReadOnlyCluster, client_config, run_on_cluster
from consumers.models import Cluster
from consumers.rocketmq import DeadlineExceeded, RocketMQError


def test_the_client_config_comes_from_the_cluster_and_settings(db, settings):
    settings.ROCKETMQ_REQUEST_TIMEOUT = 7.0
    settings.ROCKETMQ_CONNECT_TIMEOUT = 2.0
    cluster = Cluster(name="c", namesrv_addrs="127.0.0.1:1; 127.0.0.1:2", access_key="ak", secret_key="sk")
    config = client_config(cluster)
    assert config.namesrv_addrs == ["127.0.0.1:1", "127.0.0.1:2"]
    assert (config.request_timeout, config.connect_timeout) == (7.0, 2.0)
    assert config.credentials.access_key == "ak"


def test_a_read_only_cluster_refuses_a_mutation_before_connecting(db):
    cluster = Cluster(name="ro", namesrv_addrs="127.0.0.1:1", read_only=True)
    called = []

    async def work(client):
        called.append(client)

    with pytest.raises(ReadOnlyCluster, match="read-only"):
        run_on_cluster(cluster, work, mutation=True)
    assert called == []


def test_work_on_a_silent_cluster_ends_at_the_deadline(db):
    # a name server that accepts connections and never answers
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    cluster = Cluster(name="silent", namesrv_addrs=f"127.0.0.1:{server.getsockname()[1]}")

    async def work(client):
        return await client.topology.cluster_info()

    started = time.monotonic()
    with pytest.raises(RocketMQError) as caught:
        run_on_cluster(cluster, work, seconds=1.0)
    assert time.monotonic() - started < 3.0
    assert isinstance(caught.value, DeadlineExceeded) or "timed out" in str(caught.value).lower()
    server.close()


def test_the_works_result_is_returned_without_being_formatted(db):
    """Python 3.11's asyncio.run formatted repr() of the main task, result included, on its way
    out of the main thread: 0.9 s of every 10,000-group poll. The result is handed over as is."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # the case asyncio.run checks
    formatted = []

    class Large:
        def __repr__(self) -> str:
            formatted.append(1)
            return "Large()"

    async def work(client):
        return Large()

    cluster = Cluster(name="repr", namesrv_addrs="127.0.0.1:1")  # work never asks it anything
    try:
        assert isinstance(run_on_cluster(cluster, work), Large)
    finally:
        signal.signal(signal.SIGINT, before)
    assert formatted == []
