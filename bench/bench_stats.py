"""The nightly statistics job over a synthetic history: time and peak memory of spark-submit
with local[*], against a single-process pyarrow/pandas implementation of the same per-group
and per-topic daily aggregates measured in the same run; then how time grows with days.

    python -m bench.bench_stats [--groups 1000] [--queues 16] [--interval 15] [--growth-groups 100]

A day of 1,000 groups x 16 queues polled every 15 s is 92 M queue rows (written here with
pyarrow in the history's schema and layout, a few minutes and about 1.5 GB of disk).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.dataset as ds

from bench.stats_baseline import seven_tables
from consumers.stats.session import spark_environment, submit_command
from devstack.synthetic_history import write_history

FIRST_DAY = dt.date(2026, 1, 1)
SLO = 60.0
REPO = Path(__file__).resolve().parent.parent


class PeakMemory:
    """Samples the resident memory of a process tree (the driver JVM and its Python parent)."""

    def __init__(self, pid: int):
        self.pid, self.peak, self.peak_jvm, self._stop = pid, 0, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _tree(self) -> list[int]:
        children = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(parent, []).append(int(entry))
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def _rss(self, pid: int) -> tuple[int, bool]:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            name = status.split("\n", 1)[0]
        except OSError:
            return 0, False
        kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        return kib * 1024, "java" in name

    def _run(self) -> None:
        while not self._stop.is_set():
            sizes = [self._rss(pid) for pid in self._tree()]
            self.peak = max(self.peak, sum(size for size, _ in sizes))
            self.peak_jvm = max(self.peak_jvm, max((size for size, jvm in sizes if jvm), default=0))
            time.sleep(0.25)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join()


def run_spark(history: Path, output: Path, first: dt.date, last: dt.date, interval: int, memory: str,
              deduplicated: bool = True) -> dict:  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="bench-stats-run-"))
    params = {
        "history": str(history),
        "output": str(output),
        "first": first.isoformat(),
        "last": last.isoformat(),
        "as_of": dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC).isoformat(),
        "clusters": [{"cluster": "bench", "interval_seconds": interval, "slo_seconds": SLO}],
        "slo_overrides": [],
        # the synthetic history has no poll in two files (the console's runs hand the job files
        # chosen so that none is, unless two compactions just overlapped)
        "deduplicated": deduplicated,
    }
    (work / "params.json").write_text(json.dumps(params))
    command = submit_command(
        spark_submit=str(Path(sys.executable).parent / "spark-submit"), master="local[*]", driver_memory=memory,
        conf=["spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.ui.enabled=false"],
        params=work / "params.json", summary=work / "summary.json",
    )  # fmt: skip
    started = time.monotonic()
    with open(work / "log.txt", "wb") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                 env=spark_environment())  # fmt: skip
        memory_probe = PeakMemory(child.pid)
        code = child.wait()
        memory_probe.stop()
    seconds = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"spark-submit failed ({code}); log: {work / 'log.txt'}")
    summary = json.loads((work / "summary.json").read_text())
    shutil.rmtree(work)
    return {"seconds": seconds, "peak": memory_probe.peak, "peak_jvm": memory_probe.peak_jvm, "summary": summary}


def single_process_baseline(history: Path, day: dt.date, interval: int, topic_rows: bool) -> tuple[float, dict]:
    """The same seven tables with pyarrow and pandas in this process (bench/stats_baseline.py)."""
    started = time.monotonic()
    tables = seven_tables(history, "bench", day, interval=interval, slo=SLO, topic_rows=topic_rows)
    return time.monotonic() - started, tables


KEYS = {
    "topic_hourly": ["hour", "group", "topic", "retry"], "topic_daily": ["date", "group", "topic", "retry"],
    "group_hourly": ["hour", "group"], "group_daily": ["date", "group"],
    "group_health": ["hour", "group", "state"], "cluster_daily": ["date"], "top_groups": ["metric", "rank"],
}  # fmt: skip


def compare(output: Path, baseline: dict) -> dict[str, str]:
    """Each table of Spark's output against the baseline's: rows matched on the table's keys,
    every shared numeric column compared (relative 1e-9: sums in another order differ in the
    last bits of a mean)."""
    import numpy as np
    import pandas as pd

    verdicts = {}
    for name, keys in KEYS.items():
        theirs = ds.dataset(str(output / name), format="parquet", partitioning="hive").to_table().to_pandas()
        ours = baseline[name].rename(columns={"health": "state"})
        for frame in (theirs, ours):
            if "date" in frame:
                frame["date"] = pd.to_datetime(frame["date"].astype(str)).dt.date
            if "hour" in frame:
                frame["hour"] = pd.to_datetime(frame["hour"], utc=True)
            for key in ("group", "topic", "state", "metric"):
                if key in frame:
                    frame[key] = frame[key].astype(str)
        merged = theirs.merge(ours, on=keys, how="outer", suffixes=("_spark", "_base"), indicator=True)
        unmatched = int((merged["_merge"] != "both").sum())
        columns = [c for c in ours.columns if c not in keys and f"{c}_spark" in merged]
        wrong = []
        for column in columns:
            a = pd.to_numeric(merged[f"{column}_spark"], errors="coerce").astype(float)
            b = pd.to_numeric(merged[f"{column}_base"], errors="coerce").astype(float)
            same = np.isclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True)
            if not same.all():
                wrong.append(f"{column} ({int((~same).sum())} rows)")
        verdicts[name] = (f"{len(theirs)} rows, {len(columns)} columns equal" if not wrong and not unmatched
                          else f"DIFFERENT: {unmatched} unmatched rows; {', '.join(wrong)}")  # fmt: skip
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=16)
    parser.add_argument("--interval", type=int, default=15)
    parser.add_argument("--growth-groups", type=int, default=100, help="groups for the 1-to-7-day growth runs")
    parser.add_argument("--growth-days", default="1,2,4,7")
    parser.add_argument("--driver-memory", default="2560m")  # STATS_DRIVER_MEMORY's default
    parser.add_argument("--window", action="store_true", help="write the history without steps (schema 1)")
    parser.add_argument(
        "--no-topic-polls",
        action="store_true",
        help="write the history without per-topic polls (schema 2: the job sums the queue rows)",
    )
    parser.add_argument("--no-growth", action="store_true", help="skip the 1-to-7-day growth runs")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    try:
        history = base / "history"
        started = time.monotonic()
        rows = write_history(history, FIRST_DAY, 1, groups=args.groups, queues=args.queues, interval=args.interval,
                             seed=1, slow_hours=lambda day: (14, 15), steps=not args.window,
                             topics=not args.no_topic_polls)  # fmt: skip
        print(f"synthetic day: {rows:,} queue rows ({args.groups} groups x {args.queues} queues every "
              f"{args.interval} s), written in {time.monotonic() - started:.0f} s"
              f"{' without steps (schema 1: the job uses its window)' if args.window else ''}")  # fmt: skip
        spark = run_spark(history, base / "out", FIRST_DAY, FIRST_DAY, args.interval, args.driver_memory)
        spark_rate = rows / spark["seconds"]
        jvm, tree = spark["peak_jvm"] / 2**30, spark["peak"] / 2**30
        print(f"spark-submit local[*], whole job (7 tables): {spark['seconds']:.1f} s = {spark_rate:,.0f} rows/s; "
              f"peak memory: driver JVM {jvm:.2f} GiB, process tree {tree:.2f} GiB; "
              f"steps written by the poller: {spark['summary']['written_steps']}, "
              f"topic polls written by the poller: {spark['summary']['written_topic_polls']}")  # fmt: skip
        print("  stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in spark["summary"]["stages"].items()), flush=True)
        # the baseline does the job's work: from the topic polls when the job read them; and once
        # from the queue rows' offsets, an independent check of every table
        same_input = spark["summary"]["written_topic_polls"]
        baseline_seconds, baseline = single_process_baseline(history, FIRST_DAY, args.interval, same_input)
        baseline_rate = rows / baseline_seconds
        print(f"single-process pyarrow/pandas, the same 7 tables from the same input "
              f"({'topic polls' if same_input else 'queue rows'}): {baseline_seconds:.1f} s = "
              f"{baseline_rate:,.0f} rows/s")  # fmt: skip
        print(f"ratio spark / single process (rows/s): {spark_rate / baseline_rate:.2f}x")
        if same_input:
            for name, verdict in compare(base / "out", baseline).items():
                print(f"  check against the baseline's run from topic polls, {name}: {verdict}")
            offsets_seconds, baseline = single_process_baseline(history, FIRST_DAY, args.interval, False)
            print(f"single-process pyarrow/pandas from the queue rows' offsets: {offsets_seconds:.1f} s; ratio spark / "
                  f"it (rows/s): {offsets_seconds / spark['seconds']:.2f}x")  # fmt: skip
        for name, verdict in compare(base / "out", baseline).items():
            print(f"  check against the baseline's run from the queue rows' offsets, {name}: {verdict}")
        print(f"spark output rows: {spark['summary']['output_rows']}")
        shutil.rmtree(history)
        shutil.rmtree(base / "out", ignore_errors=True)
        if args.no_growth:
            return
        growth_root = base / "growth"
        print(f"growth ({args.growth_groups} groups x {args.queues} queues, one run over N days):")
        growth_days = [int(d) for d in args.growth_days.split(",")]
        written = write_history(growth_root, FIRST_DAY, max(growth_days), groups=args.growth_groups,
                                queues=args.queues, interval=args.interval, seed=10)  # fmt: skip
        per_day = written // max(growth_days)
        for days in growth_days:
            last = FIRST_DAY + dt.timedelta(days=days - 1)
            result = run_spark(growth_root, base / f"out-{days}", FIRST_DAY, last, args.interval, args.driver_memory)
            queue_rows = days * per_day  # the polls of that many queue rows (read as topic polls)
            print(f"  {days} day(s): {queue_rows:,} queue rows in {result['seconds']:.1f} s "
                  f"({queue_rows / result['seconds']:,.0f} rows/s), peak {result['peak'] / 2**30:.2f} GiB")  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
