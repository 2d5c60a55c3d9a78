"""Runs through the real spark-submit child process: the hand-worked day lands in the database,
a failing job is recorded with its error, overlapping runs are refused, a second delivery of
the task runs nothing; the hand-worked day goes through a standalone Spark master + worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.models import Cluster, HealthOverride
from consumers.stats.models import ClusterDay, GroupDay, RunDay, StatsRun
from consumers.stats.runs import RunRefused, RunRequest, execute_run, request_run
from devstack.spark import LocalSparkCluster
from tests.stats import handworked as hw

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DAY = RunRequest(hw.DAY, hw.DAY)
COMPARED = ("group", "polls", "consumed", "produced", "retries", "dlq_arrivals", "resets", "incidents",
            "lag_p50", "lag_p95", "lag_seconds_p95", "breach_minutes", "slo_seconds")  # fmt: skip


@pytest.fixture
def stats_settings(settings, tmp_path):
    settings.HISTORY_URL = str(tmp_path / "history")
    settings.STATS_OUTPUT_URL = str(tmp_path / "stats")
    settings.STATS_RUN_DIR = tmp_path / "runs"
    settings.STATS_DRIVER_MEMORY = "1g"
    settings.STATS_SPARK_CONF = [*settings.STATS_SPARK_CONF, "spark.sql.shuffle.partitions=4"]
    HistoryStore(settings.HISTORY_URL, state=MemoryOffsets()).append("c1", hw.history_tables())
    c1 = Cluster.objects.create(name="c1", namesrv_addrs="127.0.0.1:9876", poll_interval=60)
    Cluster.objects.create(name="c2", namesrv_addrs="127.0.0.1:9876", poll_interval=15)
    HealthOverride.objects.create(cluster=c1, group="g2", lag_slo_seconds=100)
    settings.STATS_LAG_SLO_SECONDS = 30.0
    return settings


# worked out by hand in handworked.py / test_job.py
EXPECTED = [
    ("g1", 5, 28, 14, 4, 5, 1, 2, 11, pytest.approx(23.6), pytest.approx(45.4), 1, 30),
    ("g2", 2, 10, 20, 0, None, 0, 0, 5, pytest.approx(9.5), pytest.approx(76.0), 0, 100),
]


def group_rows() -> list[tuple]:
    return [tuple(getattr(row, f) for f in COMPARED) for row in GroupDay.objects.order_by("group")]


def test_run_on_a_standalone_cluster_loads_the_hand_worked_day(stats_settings, tmp_path):
    """Through spark-submit to a standalone master + worker (local[*] runs are the other tests'
    and the real-broker test's): the hand-worked rows land in the database."""
    cluster = LocalSparkCluster(tmp_path / "spark", cores=1, memory="1g")
    try:
        stats_settings.STATS_SPARK_MASTER = cluster.url
        stats_settings.STATS_OUTPUT_URL = f"file://{tmp_path / 'stats-on-cluster'}"
        run = execute_run(request_run(DAY, trigger="command").pk)
    finally:
        cluster.stop()
    assert run.state == StatsRun.State.SUCCEEDED, run.error_tail
    assert run.master.startswith("spark://127.0.0.1:")
    assert "app-" in open(run.log_path).read()  # the standalone master gave it an application id
    assert run.input_rows == 14 + 8 and run.output_rows > 0  # topic polls (test_job.py) and group rows
    assert group_rows() == EXPECTED
    days = {d.cluster: (d.polls, d.expected_polls, d.groups) for d in ClusterDay.objects.all()}
    assert days == {"c1": (5, 1440, 2)}  # c2 has no poll that day: a gap, named on the run
    assert run.skipped == [{"cluster": "c2", "date": hw.DAY.isoformat(),
                            "why": f"no poll of this cluster on {hw.DAY} in the history"}]  # fmt: skip
    assert not RunDay.objects.exists()  # the claim is released
    assert "statistics written" in open(run.log_path).read()
    # the task delivered a second time runs nothing
    assert execute_run(run.pk).finished_at == run.finished_at


def test_a_run_over_expired_history_fails_and_keeps_the_day(stats_settings, tmp_path):
    stats_settings.HISTORY_URL = str(tmp_path / "expired")
    kept = GroupDay.objects.create(cluster="c1", date=hw.DAY, group="g1", polls=5, expected_polls=1440,
                                   coverage=5 / 1440, consumed=28)  # fmt: skip
    ClusterDay.objects.create(cluster="c1", date=hw.DAY, polls=5, expected_polls=1440, coverage=5 / 1440, groups=2)
    run = execute_run(request_run(RunRequest(hw.DAY, hw.DAY, cluster="c1"), trigger="command").pk)
    assert run.state == StatsRun.State.FAILED
    why = f"no poll of this cluster on {hw.DAY} in the history"
    assert run.error_tail == f"nothing computed, every day keeps the statistics it had: {why}"
    assert list(GroupDay.objects.values_list("group", "consumed")) == [("g1", 28)] and GroupDay.objects.get() == kept
    assert ClusterDay.objects.get().polls == 5 and run.output_rows == 0
    assert not Path(run.log_path).exists()  # a history without the day: no Spark started to learn it


def test_failing_job_is_recorded_with_its_error(stats_settings, tmp_path):
    store = HistoryStore(stats_settings.HISTORY_URL, state=MemoryOffsets())
    Path(store.files("group_stats", "c1")[0]).write_bytes(b"not a Parquet file")  # a file Spark cannot read
    run = execute_run(request_run(DAY, trigger="command").pk)
    assert run.state == StatsRun.State.FAILED
    assert "spark-submit exited with" in run.error_tail and "poll-" in run.error_tail
    assert not GroupDay.objects.exists() and not RunDay.objects.exists()


def test_overlapping_runs_are_refused(stats_settings):
    first = request_run(RunRequest(hw.DAY, hw.DAY), trigger="command")
    with pytest.raises(RunRefused, match=f"run #{first.pk}"):
        request_run(RunRequest(hw.DAY.replace(day=19), hw.DAY), trigger="page")
    with pytest.raises(RunRefused, match="already computing"):
        request_run(RunRequest(hw.DAY, hw.DAY, "c1"), trigger="page")
    assert StatsRun.objects.count() == 1
    for bad, why in [
        (RunRequest(hw.DAY, hw.DAY.replace(day=1)), "before it starts"),
        (RunRequest(hw.DAY, hw.DAY, "nope"), "unknown cluster"),
        (RunRequest(hw.DAY.replace(year=2099), hw.DAY.replace(year=2099)), "in the future"),
    ]:
        with pytest.raises(RunRefused, match=why):
            request_run(bad, trigger="page")
    assert StatsRun.objects.count() == 1
