"""The one place a SparkSession is made, with the settings the statistics depend on."""

from __future__ import annotations

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


def spark_session(master: str | None = None, *, app_name: str = "rocketmq-console-stats", conf=None) -> SparkSession:
    """A session for `master` (None: whatever spark-submit was given). `conf` adds or
    overrides settings other than the required ones."""
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**(conf or {}), **REQUIRED_CONF}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
