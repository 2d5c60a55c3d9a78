"""Faults on a real cluster of its own: a frozen broker, a stopped and restarted broker, a
partial snapshot, a name server that is down."""

from __future__ import annotations

import signal
import time

import pytest

from consumers.rocketmq import (
    AdminClient,
    ConnectError,
    DeadlineExceeded,
    TransportError,
    cluster_snapshot,
    deadline,
    group_progress,
)
from tests.conftest import SESSION_DIR, run
from tests.support.scenarios import prepared_cluster

pytestmark = [pytest.mark.broker, pytest.mark.slow]
TOPIC, GROUP = "T-faults", "G-faults"


@pytest.fixture(scope="module")
def cluster(rmq_runtime):
    local = prepared_cluster(rmq_runtime, SESSION_DIR / "faults", topic=TOPIC, group=GROUP)
    yield local
    local.discard()


def _client(cluster, **options) -> AdminClient:
    return AdminClient(cluster.namesrv_addr, backoff_initial=0.2, backoff_max=1.0, **options)


def test_a_frozen_broker_gives_a_timeout_within_the_deadline_then_answers_again(cluster):
    broker = cluster.brokers["broker-b"]

    async def scenario():
        async with _client(cluster) as client:
            await client.progress.consume_stats(GROUP, broker.address)  # connected and working
            broker.process.signal(signal.SIGSTOP)
            try:
                started = time.monotonic()
                with deadline(1.5), pytest.raises(DeadlineExceeded) as caught:
                    await client.progress.consume_stats(GROUP, broker.address)
                waited = time.monotonic() - started
            finally:
                broker.process.signal(signal.SIGCONT)
            stats = await client.progress.consume_stats(GROUP, broker.address)
            return caught.value, waited, stats

    error, waited, stats = run(scenario())
    assert error.address == broker.address and 1.4 < waited < 2.5
    assert {mq.queue_id for mq in stats.offsets if mq.topic == TOPIC} == {0, 1}


def test_a_snapshot_with_one_broker_frozen_keeps_the_rest_and_says_what_is_missing(cluster):
    broker = cluster.brokers["broker-b"]

    async def scenario():
        async with _client(cluster, request_timeout=1.0) as client:
            broker.process.signal(signal.SIGSTOP)
            try:
                with deadline(8):
                    return await cluster_snapshot(client, groups=[GROUP], running_info=False)
            finally:
                broker.process.signal(signal.SIGCONT)

    snapshot = run(scenario())
    progress = snapshot.groups[GROUP]
    assert {q.broker_name for q in progress.queues if q.topic == TOPIC} == {"broker-a"}
    assert [(p.scope, p.target) for p in progress.problems if p.scope == "broker"] == [("broker", "broker-b")]
    assert snapshot.brokers["broker-b"].error is not None and snapshot.brokers["broker-a"].error is None
    assert not progress.complete


def test_the_client_recovers_after_a_broker_restart(cluster):
    async def read(client):
        return await group_progress(client, GROUP, running_info=False)

    async def scenario():
        async with _client(cluster) as client:
            before = await read(client)
            cluster.stop_broker("broker-a")
            failures = []
            for _ in range(3):
                try:
                    await client.progress.consume_stats(GROUP, cluster.brokers["broker-a"].address)
                except TransportError as exc:
                    failures.append(exc)
            # started from this (main) thread, so the broker stays tied to the test process
            cluster.start_broker("broker-a")
            deadline_at = time.monotonic() + 20
            while True:
                try:
                    stats = await client.progress.consume_stats(GROUP, cluster.brokers["broker-a"].address)
                    break
                except TransportError:
                    if time.monotonic() > deadline_at:
                        raise
                    time.sleep(0.3)
            return before, failures, stats

    before, failures, stats = run(scenario())
    assert len(failures) == 3 and all(f.address == cluster.brokers["broker-a"].address for f in failures)
    assert {mq.queue_id: w.consumer_offset for mq, w in stats.offsets.items() if mq.topic == TOPIC} == {0: 1, 1: 1}
    assert len([q for q in before.queues if q.topic == TOPIC]) == 4


def test_a_name_server_that_is_down_gives_a_clear_error(cluster):
    cluster.namesrv.stop()
    cluster.namesrv = None

    async def scenario():
        async with _client(cluster) as client:
            with pytest.raises(ConnectError) as caught:
                await client.topology.cluster_info()
            return caught.value

    error = run(scenario())
    assert f"no name server answered ({cluster.namesrv_addr})" in str(error)
    assert "cannot connect" in str(error)
