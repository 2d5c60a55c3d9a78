"""One chromium per report build (consumers/jobs/processes.py): the real chromium, with every
process it starts, dies with the worker that started it; a take-over kills the chromium an
earlier attempt recorded before it builds in a folder of its own, and the report names the
attempt that wrote its files."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from consumers.jobs import claims
from consumers.jobs import processes as jobprocess
from consumers.models import Cluster
from consumers.reports import services
from consumers.reports.content import ReportSpec
from consumers.reports.models import Report
from consumers.stats.models import GroupDay
from tests.stats.test_run_processes import REPOSITORY, alive, eventually

pytestmark = pytest.mark.django_db(transaction=True)


def group_members(pgid: int) -> set[int]:
    members = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # gone meanwhile
            if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp
                members.add(int(entry.name))
    return members


WORKER = textwrap.dedent("""
    import subprocess, sys, time
    from consumers.jobs import processes as jobprocess

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]
    command = [sys.argv[1], *flags, f"--user-data-dir={sys.argv[2]}", "--remote-debugging-port=0", "about:blank"]
    chromium = jobprocess.launch(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(chromium.pid, flush=True)
    time.sleep(300)
""")


def test_chromium_and_every_process_it_started_die_with_the_worker(tmp_path):
    worker = subprocess.Popen([sys.executable, "-c", WORKER, settings.REPORT_CHROMIUM, tmp_path], cwd=REPOSITORY,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPOSITORY)})  # fmt: skip
    chromium = None
    try:
        chromium = int(worker.stdout.readline())
        assert eventually(lambda: len(group_members(chromium)) >= 3, 30), "chromium started no renderer"
        worker.kill()
        worker.wait()
        assert eventually(lambda: not group_members(chromium)), f"left running: {group_members(chromium)}"
    finally:
        worker.kill()
        worker.wait()
        if chromium is not None and group_members(chromium):
            os.killpg(chromium, signal.SIGKILL)


FAKE_CHROMIUM = """#!{python}
# stands in for chromium: prints a "PDF" saying whether the earlier attempt's chromium still ran,
# and leaves a process behind, as a renderer that outlives the browser would
import os, subprocess, sys
from pathlib import Path

stat = Path(f"/proc/{{os.environ['EARLIER_PID']}}/stat")
earlier = stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
left = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
Path(os.environ["LEFT_PID_FILE"]).write_text(str(left.pid))
target = next(a.removeprefix("--print-to-pdf=") for a in sys.argv if a.startswith("--print-to-pdf="))
Path(target).write_text(f"%PDF-1.4 earlier chromium running: {{earlier}}")
"""


@pytest.fixture
def report(settings, tmp_path, monkeypatch):
    settings.REPORT_DIR = tmp_path / "reports"
    settings.STATS_OUTPUT_URL = str(tmp_path / "no-parquet")
    settings.REPORT_CHROMIUM = str(tmp_path / "chromium")
    Path(settings.REPORT_CHROMIUM).write_text(FAKE_CHROMIUM.format(python=sys.executable))
    Path(settings.REPORT_CHROMIUM).chmod(0o755)
    monkeypatch.setenv("LEFT_PID_FILE", str(tmp_path / "left-pid"))
    day = timezone.now().date() - dt.timedelta(days=1)
    Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876", poll_interval=60)
    GroupDay.objects.create(cluster="east", date=day, group="orders", polls=1440, expected_polls=1440, coverage=1.0)
    return services.request_report(ReportSpec(("east",), day, day), ["csv", "pdf"])


def test_a_take_over_kills_the_earlier_chromium_and_names_the_attempt_that_wrote_the_files(
    report, tmp_path, monkeypatch, viewer_client
):
    # attempt 1: its worker died while its chromium printed on, into attempt 1's folder
    token = claims.claim(Report, report.pk, ready={Report.State.QUEUED}, running=Report.State.RUNNING).token
    assert jobprocess.begin_attempt(Report, report.pk, token) == 1
    (services.report_dir(report) / "attempt-1").mkdir(parents=True)
    (services.report_dir(report) / "attempt-1" / "half-printed.pdf").write_text("%PDF")
    orphan = subprocess.Popen(["sleep", "300"], process_group=0)
    try:
        started, stale = jobprocess.start_time(orphan.pid), timezone.now() - dt.timedelta(minutes=10)
        Report.objects.filter(pk=report.pk).update(process_pid=orphan.pid, process_started=started, heartbeat_at=stale)
        monkeypatch.setenv("EARLIER_PID", str(orphan.pid))

        built = services.build_report(report.pk)  # the task queued again: it takes the build over
        assert orphan.wait(5) == -signal.SIGKILL
    finally:
        orphan.kill()
        orphan.wait()
    assert built.state == Report.State.READY, built.error
    assert (built.attempt, built.files_attempt) == (2, 2)
    pdf = services.report_dir(built) / built.files["pdf"]
    assert pdf.read_text() == "%PDF-1.4 earlier chromium running: False"  # killed before this one started
    assert sorted(p.name for p in services.report_dir(built).iterdir()) == sorted(built.files.values())
    left = int((tmp_path / "left-pid").read_text())
    assert eventually(lambda: not alive(left))  # what chromium left in its group went with it
    assert built.process_pid not in (None, orphan.pid) and not alive(built.process_pid)
    row = viewer_client.get(f"/reports/{built.pk}/row/").content.decode()
    assert 'data-files-attempt="2"' in row and "written by attempt 2" in row
