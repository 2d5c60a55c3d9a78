"""A throwaway Prometheus (Debian's `prometheus` package) on 127.0.0.1, for the tests that
check what a real scraper makes of /metrics."""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from .processes import ManagedProcess, StartupError, free_port

BINARY = "prometheus"


class LocalPrometheus:
    def __init__(self, *, target: str, token: str, interval: str = "1s", rules: Path | None = None):
        if shutil.which(BINARY) is None:
            raise StartupError("prometheus not found: apt-get install prometheus (the CI script does)")
        self.root = Path(tempfile.mkdtemp(prefix="prometheus-"))
        (self.root / "token").write_text(token)
        rule_files = f"rule_files: [{json.dumps(str(rules))}]\n" if rules else ""
        (self.root / "prometheus.yml").write_text(
            f"global: {{scrape_interval: {interval}, evaluation_interval: {interval}}}\n"
            f"{rule_files}"
            "scrape_configs:\n"
            "  - job_name: rocketmq-console\n"
            "    metrics_path: /metrics\n"
            f"    authorization: {{type: Bearer, credentials_file: {json.dumps(str(self.root / 'token'))}}}\n"
            f"    static_configs: [{{targets: [{json.dumps(target)}]}}]\n"
        )
        self.port = free_port()
        self.process = ManagedProcess(
            "prometheus",
            [
                BINARY,
                f"--config.file={self.root / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.root / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],  # fmt: skip
            log_path=self.root / "prometheus.log",
        )
        self.process.wait_for_log("Server is ready to receive web requests", timeout=60)

    def api(self, path: str, **params) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]

    def stop(self) -> None:
        self.process.stop(grace=10)
        shutil.rmtree(self.root, ignore_errors=True)
