"""The one place a SparkSession is made, with the settings the statistics depend on.

pyspark is imported only where a session is made: the web process and the worker's other tasks
import this module (the statistics pages, runs.py) and run where it is not installed (the `web`
image: Containerfile)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Without these the numbers change with the machine: dates and hours are UTC whatever the
# JVM's zone, a rerun replaces only the partitions it computed, and a cluster named "123"
# stays a string rather than becoming a number when partitions are discovered.
REQUIRED_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS",
}


# Defaults a deployment may override: a queue's day (5,760 polls at 15 s, plus the look-back)
# must stay in memory in the per-queue window; Spark's 4,096-row default spills every queue
# to disk and made a 1,000-group day several times slower.
DEFAULT_CONF = {
    "spark.sql.windowExec.buffer.in.memory.threshold": "1000000",
    "spark.sql.windowExec.buffer.spill.threshold": "2000000",
}


def spark_session(master: str | None = None, *, app_name: str = "rocketmq-console-stats", conf=None) -> SparkSession:
    """A session for `master` (None: whatever spark-submit was given). `conf` adds or
    overrides settings other than the required ones."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**DEFAULT_CONF, **(conf or {}), **REQUIRED_CONF}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def spark_environment(extra_path: str | None = None) -> dict:
    """The environment of a spark-submit child: this virtualenv's Python and pyspark (its
    launcher otherwise looks for `python3` on PATH, which may not have pyspark), the
    repository on the path, and the driver on the loopback interface unless told otherwise."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    pyspark = importlib.util.find_spec("pyspark")
    if pyspark is not None and pyspark.origin:  # not installed: spark-submit is not there either
        env.setdefault("SPARK_HOME", str(Path(pyspark.origin).parent))
    repository = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [repository, extra_path, env.get("PYTHONPATH")]))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


JOB_FILE = Path(__file__).with_name("job.py")


def submit_command(
    *, spark_submit: str, master: str, driver_memory: str, conf: list[str], params: Path, summary: Path
) -> list[str]:
    """The spark-submit command line of the statistics job (`conf`: "key=value" pairs)."""
    command = [spark_submit, "--master", master, "--driver-memory", driver_memory]
    for pair in conf:
        command += ["--conf", pair]
    return [*command, str(JOB_FILE), "--params", str(params), "--summary", str(summary)]
