"""The history the poller writes is exactly what the statistics job reads: the files written by
the production path (publish_poll -> HistoryStore) have, column for column, the Parquet types
of the job's read schema (job.HISTORY_DDL), and their directories are its partition columns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.models import Cluster
from consumers.stats import job
from consumers.stats.session import JOB_FILE
from tests.support.published import group, publish


def spark_type(column) -> str:
    """The Spark SQL type Spark reads a Parquet column as (the types the history may use)."""
    logical = column.logical_type.type
    if column.physical_type == "INT64" and logical == "TIMESTAMP":
        # Spark reads a UTC-adjusted timestamp as `timestamp`; a local one would be timestamp_ntz
        return "timestamp" if '"isAdjustedToUTC":true' in column.logical_type.to_json() else "timestamp_ntz"
    return {
        ("BYTE_ARRAY", "STRING"): "string",
        ("INT32", "NONE"): "int",
        ("INT64", "NONE"): "bigint",
        ("DOUBLE", "NONE"): "double",
        ("BOOLEAN", "NONE"): "boolean",
    }[(column.physical_type, logical)]


def ddl_columns(ddl: str) -> list[tuple[str, str]]:
    return [tuple(part.strip().replace("`", "").split()) for part in ddl.split(",")]


def test_the_files_the_poller_writes_have_the_schema_the_job_reads(db, redis, tmp_path):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    store = HistoryStore(tmp_path / "history", state=MemoryOffsets())
    publish(cluster, redis, [group("orders", lag=40), group("audit", lag=7, online=False)], history=store)
    for table in ("queue_offsets", "group_stats", "topic_polls"):
        (path,) = map(Path, store.files(table, "east"))
        assert pq.read_metadata(path).num_rows > 0
        parquet = pq.ParquetFile(path).schema
        written = [(parquet.column(i).name, spark_type(parquet.column(i))) for i in range(len(parquet))]
        directories = [part.split("=")[0] for part in path.relative_to(tmp_path / "history" / table).parts[:-1]]
        expected = ddl_columns(job.HISTORY_DDL[table])
        assert written == expected[:-2], table
        assert expected[-2:] == [("cluster", "string"), ("date", "string")] and directories == ["cluster", "date"]


def test_the_job_run_as_a_file_imports_the_shared_schema(tmp_path):
    """spark-submit runs job.py as a file, with its own directory first on sys.path: the job
    must still import the shared schema, which needs neither Django nor pyarrow."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run(
        [sys.executable, str(JOB_FILE), "--help"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stderr
    probe = "import sys, consumers.live.history_schema; print(sorted({'django', 'pyarrow'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=JOB_FILE.parents[2], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
