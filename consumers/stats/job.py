"""The nightly statistics job, run by spark-submit (never inside a Celery worker):

    spark-submit --master local[*] consumers/stats/job.py --params run.json --summary out.json

run.json names the history and output locations (paths or URLs: file://, hdfs://, s3a://, so a
real cluster can read and write them), the history files the run chose, the days, the clusters
with their poll interval and default lag SLO, and per-group SLO overrides. The job reads those
days plus the day before and computes every table of transforms.statistics for each (cluster,
day) the history has polls of. A (cluster, day) without polls is left alone and named in the
summary's `skipped`: a day never loses rows it had because its history has expired since
(history is kept for weeks, statistics for months). The tables are written to a staging
location first and swapped in per (cluster, day) only after every table was written, one sorted
file each, so a rerun gives the same rows and a failed run changes nothing. The summary file
(local to the driver) gets the row counts of what this run wrote and the small per-day rows the
console keeps in its database. Only the DataFrame API is used: executors need no Python code of
ours.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):
    # Run as a file by spark-submit, Python put this directory first on the path, where our
    # selectors.py would shadow the standard library's: put the repository root there instead.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.path.insert(0, os.path.dirname(os.path.dirname(_here)))

import argparse
import datetime as dt
import json
import time
import uuid
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from consumers.live import history_schema
from consumers.stats import gaps, transforms
from consumers.stats.session import spark_session

# The history's schema as the poller writes it (one definition: history_schema.py), plus its
# partition columns.
HISTORY_DDL = {table: history_schema.spark_ddl(table) for table in history_schema.COLUMNS}
SORT_KEYS = ("hour", "group", "topic", "state", "metric", "rank")
SUMMARY_TABLES = ("group_daily", "cluster_daily")


def _path(spark: SparkSession, url: str):
    """The Hadoop file system and path of `url`: the same calls serve file://, hdfs:// and s3a://."""
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(url)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _exists(spark: SparkSession, url: str) -> bool:
    fs, path = _path(spark, url)
    return fs.exists(path)


def read_history(spark: SparkSession, root: str, table: str, clusters: list[str], first: dt.date, last: dt.date,
                 files: list[str] | None = None):  # fmt: skip
    """The table's rows of the clusters for first - 1 day .. last (the look-back included):
    from `files` when the run chose them (each poll in one of them unless the params say
    otherwise: consumers/live/history_files.py), else every file under `root`."""
    location = f"{root.rstrip('/')}/{table}"
    if files is not None:
        if not files:
            return spark.createDataFrame([], HISTORY_DDL[table])
        # basePath: the partition columns (cluster, date) still come from the folders
        frame = spark.read.schema(HISTORY_DDL[table]).option("basePath", location).parquet(*files)
    elif not _exists(spark, root):
        raise FileNotFoundError(f"history location {root} does not exist")
    elif not _exists(spark, location):
        return spark.createDataFrame([], HISTORY_DDL[table])
    else:
        frame = spark.read.schema(HISTORY_DDL[table]).parquet(location)
    since = (first - dt.timedelta(days=1)).isoformat()
    return frame.where(F.col("date").between(since, last.isoformat()) & F.col("cluster").isin(clusters)).drop("date")


def polled_days(groups: DataFrame, first: dt.date, last: dt.date) -> set[tuple[str, str]]:
    """The (cluster, day) pairs of the period with at least one poll in the history."""
    days = groups.select("cluster", F.to_date("ts").alias("date")).where(
        F.col("date").between(first.isoformat(), last.isoformat())
    )
    return {(row.cluster, row.date.isoformat()) for row in days.distinct().collect()}


def write_table(frame: DataFrame, location: str) -> None:
    keys = [k for k in SORT_KEYS if k in frame.columns]
    (
        frame.repartition("cluster", "date")
        .sortWithinPartitions("cluster", "date", *keys)
        .write.mode("overwrite")
        .partitionBy("cluster", "date")
        .parquet(location)
    )


def swap_in(spark: SparkSession, staging: str, output: str, tables, days: set[tuple[str, str]]) -> None:
    """Each computed (cluster, day) partition of every table replaced by the staged one, or
    removed when this run found no row for it (an empty top list is a result too)."""
    escape = spark.sparkContext._jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils.escapePathName
    for name in tables:
        for cluster, date in sorted(days):
            relative = f"{name}/cluster={escape(cluster)}/date={date}"
            fs, target = _path(spark, f"{output}/{relative}")
            _, staged = _path(spark, f"{staging}/{relative}")
            if fs.exists(target) and not fs.delete(target, True):
                raise OSError(f"could not remove the old partition {target}")
            if fs.exists(staged):
                fs.mkdirs(target.getParent())
                if not fs.rename(staged, target):
                    raise OSError(f"could not move {staged} to {target}")


def _plain(value):
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value


def run(spark: SparkSession, params: dict) -> dict:
    first, last = dt.date.fromisoformat(params["first"]), dt.date.fromisoformat(params["last"])
    as_of = dt.datetime.fromisoformat(params["as_of"])
    cluster_rows = params["clusters"]
    names = [c["cluster"] for c in cluster_rows]
    clusters = spark.createDataFrame(cluster_rows, "cluster string, interval_seconds int, slo_seconds double")
    slo = spark.createDataFrame(params.get("slo_overrides", []), "cluster string, `group` string, slo_seconds double")
    chosen = params.get("history_files") or {}
    queues, groups, topics = (read_history(spark, params["history"], table, names, first, last, chosen.get(table))
                              for table in ("queue_offsets", "group_stats", "topic_polls"))  # fmt: skip
    started = time.monotonic()
    # Parquet footers: cheap
    input_rows = {"queue_offsets": queues.count(), "group_stats": groups.count(), "topic_polls": topics.count()}
    # history schema 2 rows carry the steps their writer computed: no per-queue window needed,
    # unless some row of the period was written before (its steps are unknown); schema 3 group
    # rows say that their poll's topic_polls rows were written: the job then reads those instead
    # of the queue rows, unless some group row of the period was written before
    start, end = transforms.period_bounds(first, last)
    without_topics = transforms.in_period(groups, start, end).where(~F.coalesce("topic_polls", F.lit(False)))
    written_topics = not without_topics.limit(1).count()
    # schema 3's writer steps every queue row: no scan of the queue rows' `steps` to find out
    unstepped = transforms.in_period(queues, start, end).where(~F.coalesce("steps", F.lit(False)))
    written_steps = written_topics or not unstepped.limit(1).count()
    deduplicated = bool(params.get("deduplicated"))
    # Shuffle partitions of about a million rows each: Spark's fixed 200 costs more in task
    # overhead than a small cluster's whole day takes to compute. Without a window or a
    # deduplication the queue rows are never shuffled, only the per-topic polls (a queue row in
    # 16 or so, after partial aggregation)
    # rows in: the rows of the tables the run reads (the queue rows of a topic with a console
    # reset, read beside its topic polls, are not counted)
    input_rows.pop("queue_offsets" if written_topics else "topic_polls")
    if written_topics:
        shuffled = input_rows["topic_polls"]
    else:
        shuffled = input_rows["queue_offsets"] // (16 if written_steps and deduplicated else 1)
    parallelism = spark.sparkContext.defaultParallelism
    spark.conf.set("spark.sql.shuffle.partitions", max(parallelism, -(-shuffled // 1_000_000)))
    resets = None if not params.get("console_resets") else spark.createDataFrame(
        [{**r, "started_at": dt.datetime.fromisoformat(r["started_at"]),
          "finished_at": dt.datetime.fromisoformat(r["finished_at"])} for r in params.get("console_resets", [])],
        "cluster string, `group` string, topic string, broker string, queue_id int, started_at timestamp, "
        "finished_at timestamp, to_offset bigint",
    )  # fmt: skip
    polled = polled_days(groups, first, last)
    summary = {
        "input_rows": input_rows,
        "output_rows": {},
        "computed": [{"cluster": c, "date": d} for c, d in sorted(polled)],
        "skipped": gaps.skipped(names, first, last, polled, params),
        "seconds": 0.0,
    }
    if not polled:
        return summary
    stages = summary["stages"] = {"read": round(time.monotonic() - started, 3)}

    def prepared(frames: dict[str, DataFrame]) -> None:
        for name, frame in frames.items():  # cached: counting computes them once, here
            clock = time.monotonic()
            frame.count()
            stages[name] = round(time.monotonic() - clock, 3)

    tables = transforms.statistics(
        queues, groups, clusters, slo, first=first, last=last, as_of=as_of, console_resets=resets,
        topic_rows=topics if written_topics else None, written_steps=written_steps, deduplicated=deduplicated,
        on_prepared=prepared,
    )  # fmt: skip
    summary["written_steps"], summary["written_topic_polls"] = written_steps, written_topics
    output = params["output"].rstrip("/")
    staging = f"{output}/_staging/{uuid.uuid4().hex}"
    computed = F.broadcast(spark.createDataFrame(sorted(polled), "polled_cluster string, polled_date string"))
    try:
        for name, frame in tables.items():
            clock = time.monotonic()
            on = (F.col("cluster") == F.col("polled_cluster")) & (F.col("date").cast("string") == F.col("polled_date"))
            write_table(frame.join(computed, on, "left_semi"), f"{staging}/{name}")
            stages[name] = round(time.monotonic() - clock, 3)
            # the schema given: a table with no row this run (an empty top list) has no file to infer it from
            written = spark.read.schema(frame.schema).parquet(f"{staging}/{name}")
            summary["output_rows"][name] = written.count()
            if name in SUMMARY_TABLES:
                summary[name] = [{k: _plain(v) for k, v in row.asDict().items()} for row in written.collect()]
        swap_in(spark, staging, output, tables, polled)
    finally:
        fs, path = _path(spark, staging)
        fs.delete(path, True)
    summary["seconds"] = round(time.monotonic() - started, 3)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", required=True, help="JSON file: history, output, first, last, as_of, clusters")
    parser.add_argument("--summary", required=True, help="where to write the JSON summary (driver-local path)")
    args = parser.parse_args(argv)
    params = json.loads(Path(args.params).read_text())
    spark = spark_session()
    try:
        summary = run(spark, params)
    finally:
        spark.stop()
    Path(args.summary).write_text(json.dumps(summary))
    print(f"statistics written: {json.dumps(summary['output_rows'])}, input {json.dumps(summary['input_rows'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
