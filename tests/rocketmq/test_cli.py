"""The command line prints what mqadmin consumerProgress prints."""

from __future__ import annotations

import subprocess
import sys

import pytest

from devstack.mqadmin import parse_consumer_progress
from devstack.processes import free_port

pytestmark = pytest.mark.broker


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "consumers.rocketmq", *args], capture_output=True, text=True, timeout=60
    )


def test_progress_rows_and_totals_equal_mqadmin(settled, namesrv, mqadmin):
    group = settled.failing.group
    ours = _cli("-n", namesrv, "progress", "-g", group)
    assert ours.returncode == 0, ours.stderr
    theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group, "-s", "true").out)
    rows = [line.split() for line in ours.stdout.splitlines()[1:] if line.strip() and not line.startswith("Consume")]
    assert theirs.rows
    assert [(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), int(r[6])) for r in rows] == [
        (r.topic, r.broker, r.queue_id, r.broker_offset, r.consumer_offset, r.diff) for r in theirs.rows
    ]
    # our client column has the whole client id; mqadmin shows its IP
    assert [r[5].split("@")[0] for r in rows] == [r.client_ip for r in theirs.rows]
    assert f"Consume Diff Total: {theirs.diff_total}" in ours.stdout


def test_an_unreachable_name_server_is_a_clear_error():
    result = _cli("-n", f"127.0.0.1:{free_port()}", "--timeout", "1", "cluster")
    assert result.returncode == 2
    assert result.stderr.startswith("error: no name server answered")


def test_a_broadcasting_group_fails_like_mqadmin(traffic, names, create_topic, namesrv, mqadmin):
    topic, group = create_topic(names.topic("bc")), names.group("bc")
    traffic.produce(topic, 4)
    for i in range(2):
        traffic.consume(group, topic, model="BROADCASTING", instanceName=f"{group}-{i}").wait_acked(4)
    theirs = mqadmin.run("consumerProgress", "-g", group, check=False)
    assert "CODE: 213" in theirs.err + theirs.out and "broadcast mode" in theirs.err + theirs.out
    ours = _cli("-n", namesrv, "progress", "-g", group)
    assert ours.returncode != 0 and ours.stdout == ""
    assert "CODE: 213" in ours.stderr and "under the broadcast mode" in ours.stderr
