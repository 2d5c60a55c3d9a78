"""One process per statistics run (consumers/jobs/processes.py), without Spark: a job's process dies
with the worker that started it; a take-over kills the process an earlier attempt recorded,
and only that process (same pid and start time); each attempt has its own folder and log, and
the run names the attempt whose rows it loaded."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from django.utils import timezone

from consumers.jobs import claims
from consumers.jobs import processes as jobprocess
from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.models import Cluster
from consumers.stats.models import GroupDay, StatsRun
from consumers.stats.runs import RunRequest, execute_run, log_text, request_run
from tests.stats import handworked as hw

REPOSITORY = Path(__file__).resolve().parents[2]


def eventually(condition, timeout: float = 10.0) -> bool:
    """Poll `condition` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def alive(pid: int) -> bool:
    return jobprocess.start_time(pid) is not None


WORKER = textwrap.dedent("""
    import subprocess, sys, time
    from consumers.jobs import processes as jobprocess

    ours = jobprocess.launch(["sleep", "300"])
    plain = subprocess.Popen(["sleep", "300"])  # started as before: outlives us
    print(ours.pid, plain.pid, flush=True)
    time.sleep(300)
""")


def test_a_jobs_process_dies_with_the_worker_that_started_it():
    worker = subprocess.Popen([sys.executable, "-c", WORKER], cwd=REPOSITORY, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(REPOSITORY)})  # fmt: skip
    ours = plain = None
    try:
        ours, plain = map(int, worker.stdout.readline().split())
        assert alive(ours) and alive(plain)
        assert os.getpgid(ours) == ours != os.getpgid(worker.pid)  # a process group of its own
        worker.kill()  # SIGKILL: no handler, no finally, no atexit runs in the worker
        worker.wait()
        assert eventually(lambda: not alive(ours)), f"sleep {ours} outlived its worker"
        assert alive(plain)  # what the test would see without the helper
    finally:
        worker.kill()
        worker.wait()
        for pid in (ours, plain):
            if pid is not None and alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def claimed_run(db, settings):
    Cluster.objects.create(name="c1", namesrv_addrs="127.0.0.1:9876")
    run = request_run(RunRequest(hw.DAY, hw.DAY), trigger="command")
    claim = claims.claim(StatsRun, run.pk, ready={StatsRun.State.QUEUED}, running=StatsRun.State.RUNNING)
    processes = []
    yield run, claim.token, processes
    for process in processes:
        process.kill()
        process.wait()


def record(run: StatsRun, pid: int, started: int) -> None:
    StatsRun.objects.filter(pk=run.pk).update(process_pid=pid, process_started=started)


def test_a_successor_kills_the_recorded_process_and_only_that_one(claimed_run):
    run, token, processes = claimed_run
    assert jobprocess.begin_attempt(StatsRun, run.pk, token) == 1  # nothing recorded: nothing killed
    # attempt 1's process outlived its worker (it had no parent-death signal)
    orphan = subprocess.Popen(["sleep", "300"], process_group=0)
    left = subprocess.Popen(["sleep", "300"], process_group=orphan.pid)  # something it started
    processes += [orphan, left]
    record(run, orphan.pid, jobprocess.start_time(orphan.pid))
    assert jobprocess.begin_attempt(StatsRun, run.pk, token) == 2
    assert orphan.wait(5) == -signal.SIGKILL and left.wait(5) == -signal.SIGKILL  # the whole group

    # the recorded pid now belongs to another process: it started at another time
    unrelated = subprocess.Popen(["sleep", "300"], process_group=0)
    processes.append(unrelated)
    record(run, unrelated.pid, jobprocess.start_time(unrelated.pid) - 1)
    assert jobprocess.begin_attempt(StatsRun, run.pk, token) == 3
    assert unrelated.poll() is None and alive(unrelated.pid)

    # a run taken over meanwhile starts no attempt
    StatsRun.objects.filter(pk=run.pk).update(run_token="another worker's")
    with pytest.raises(jobprocess.Superseded):
        jobprocess.begin_attempt(StatsRun, run.pk, token)
    with pytest.raises(jobprocess.Superseded):
        jobprocess.run(jobprocess.Owner(StatsRun, run.pk, token), ["sleep", "300"], timeout=5)
    assert StatsRun.objects.get(pk=run.pk).attempt == 3


def test_a_timed_out_process_is_killed_with_its_group(claimed_run, tmp_path):
    run, token, _ = claimed_run
    with pytest.raises(subprocess.TimeoutExpired):
        jobprocess.run(jobprocess.Owner(StatsRun, run.pk, token), ["sleep", "300"], timeout=0.2)
    recorded = StatsRun.objects.get(pk=run.pk)
    assert recorded.process_pid and not alive(recorded.process_pid)
    # a process that ends normally: what it left in its group goes too
    script = "import subprocess; print(subprocess.Popen(['sleep', '300']).pid)"
    with open(tmp_path / "out", "w") as out:
        assert jobprocess.run(None, [sys.executable, "-c", script], timeout=10, stdout=out) == 0
    left = int((tmp_path / "out").read_text())
    assert eventually(lambda: not alive(left))


FAKE_SPARK_SUBMIT = """#!{python}
# stands in for spark-submit: says whether the earlier attempt's process still ran, writes a summary
import json, os, sys
from pathlib import Path

params = json.loads(Path(sys.argv[sys.argv.index("--params") + 1]).read_text())
stat = Path(f"/proc/{{os.environ['EARLIER_PID']}}/stat")
earlier = stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
print(f"history {{params['history']}}; earlier attempt's process running: {{earlier}}", flush=True)
day, polls = params["first"], {{"polls": 5, "expected_polls": 1440, "coverage": 5 / 1440}}
summary = {{"computed": [{{"cluster": "c1", "date": day}}], "skipped": [], "input_rows": {{"topic_polls": 14}},
           "output_rows": {{"group_daily": 1}},
           "group_daily": [{{"cluster": "c1", "date": day, "group": "g1", **polls}}],
           "cluster_daily": [{{"cluster": "c1", "date": day, "groups": 1, **polls}}]}}
Path(sys.argv[sys.argv.index("--summary") + 1]).write_text(json.dumps(summary))
"""


@pytest.mark.django_db(transaction=True)
def test_a_take_over_runs_a_new_attempt_in_its_own_folder_and_names_it(settings, tmp_path, monkeypatch, viewer_client):
    settings.HISTORY_URL = str(tmp_path / "history")
    settings.STATS_OUTPUT_URL = str(tmp_path / "stats")
    settings.STATS_RUN_DIR = tmp_path / "runs"
    settings.STATS_SPARK_SUBMIT = str(tmp_path / "spark-submit")
    Path(settings.STATS_SPARK_SUBMIT).write_text(FAKE_SPARK_SUBMIT.format(python=sys.executable))
    Path(settings.STATS_SPARK_SUBMIT).chmod(0o755)
    HistoryStore(settings.HISTORY_URL, state=MemoryOffsets()).append("c1", hw.history_tables())
    Cluster.objects.create(name="c1", namesrv_addrs="127.0.0.1:9876", poll_interval=60)
    run = request_run(RunRequest(hw.DAY, hw.DAY), trigger="command")

    # attempt 1: its worker died while its spark-submit ran on, leaving its log
    token = claims.claim(StatsRun, run.pk, ready={StatsRun.State.QUEUED}, running=StatsRun.State.RUNNING).token
    assert jobprocess.begin_attempt(StatsRun, run.pk, token) == 1
    first_log = settings.STATS_RUN_DIR / str(run.pk) / "attempt-1" / "log.txt"
    first_log.parent.mkdir(parents=True)
    first_log.write_text("attempt 1 was here\n")
    orphan = subprocess.Popen(["sleep", "300"], process_group=0)
    try:
        record(run, orphan.pid, jobprocess.start_time(orphan.pid))
        StatsRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - dt.timedelta(minutes=10))
        monkeypatch.setenv("EARLIER_PID", str(orphan.pid))

        run = execute_run(run.pk)  # the task queued again: it takes the run over
        assert orphan.wait(5) == -signal.SIGKILL
    finally:
        orphan.kill()
        orphan.wait()
    assert run.state == StatsRun.State.SUCCEEDED, run.error_tail
    assert (run.attempt, run.output_attempt) == (2, 2)
    assert run.log_path == str(settings.STATS_RUN_DIR / str(run.pk) / "attempt-2" / "log.txt")
    second = log_text(run)
    assert "earlier attempt's process running: False" in second  # killed before this one started
    assert f"history file://{tmp_path / 'history'};" in second  # the history itself: no snapshot of it
    assert log_text(run, attempt=1) == "attempt 1 was here\n"  # not truncated by the take-over
    assert list(GroupDay.objects.values_list("group", "polls")) == [("g1", 5)]
    recorded = StatsRun.objects.get(pk=run.pk)
    assert recorded.process_pid not in (None, orphan.pid) and not alive(recorded.process_pid)
    # the Jobs page names the attempts, and each attempt's log is there
    page = viewer_client.get("/stats/jobs/").content.decode()
    assert "of attempt 2" in page and 'data-output-attempt="2"' in page and "output by attempt 2" in page
    assert viewer_client.get(f"/stats/jobs/{run.pk}/log/?attempt=1").content == b"attempt 1 was here\n"
    assert b"earlier attempt's process running: False" in viewer_client.get(f"/stats/jobs/{run.pk}/log/").content
    assert viewer_client.get(f"/stats/jobs/{run.pk}/log/?attempt=3").status_code == 404
