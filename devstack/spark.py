"""A standalone Spark master and one worker on 127.0.0.1, started with the pinned pyspark's
own `spark-class`: what the tests and the benchmark use to show the statistics job runs
unchanged on a real Spark cluster (`--master spark://...`)."""

from __future__ import annotations

import sys
from pathlib import Path

from consumers.stats.session import spark_environment

from .processes import ManagedProcess, free_port


def spark_class() -> str:
    return str(Path(sys.executable).parent / "spark-class")


class LocalSparkCluster:
    def __init__(self, base_dir: Path, *, cores: int = 2, memory: str = "2g"):
        self.port = free_port()
        master_ui, worker_ui, worker_port = free_port(), free_port(), free_port()
        base_dir.mkdir(parents=True, exist_ok=True)
        env = spark_environment()
        env.update(SPARK_LOG_DIR=str(base_dir / "logs"), SPARK_WORKER_DIR=str(base_dir / "work"))
        self.master = ManagedProcess(
            "spark-master",
            [spark_class(), "org.apache.spark.deploy.master.Master",
             "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(master_ui)],
            log_path=base_dir / "master.log",
            env=env,
        )  # fmt: skip
        self.master.wait_for_log("I have been elected leader", 90)
        self.worker = ManagedProcess(
            "spark-worker",
            [spark_class(), "org.apache.spark.deploy.worker.Worker", self.url,
             "--host", "127.0.0.1", "--port", str(worker_port), "--webui-port", str(worker_ui),
             "--cores", str(cores), "--memory", memory],
            log_path=base_dir / "worker.log",
            env=env,
        )  # fmt: skip
        self.worker.wait_for_log("Successfully registered with master", 90)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.worker.stop(10)
        self.master.stop(10)
