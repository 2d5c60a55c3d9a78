"""A throwaway Prometheus Alertmanager (Debian's `prometheus-alertmanager`) on 127.0.0.1, for
the tests that deliver the console's alerts to a real one. It routes everything to one
webhook (a local receiver), with short waits so a test sees notifications in seconds."""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.request
from pathlib import Path

from .processes import ManagedProcess, StartupError, free_port

BINARY = "prometheus-alertmanager"


class LocalAlertmanager:
    def __init__(self, *, webhook_url: str):
        if shutil.which(BINARY) is None:
            raise StartupError("prometheus-alertmanager not found: apt-get install prometheus-alertmanager")
        self.root = Path(tempfile.mkdtemp(prefix="alertmanager-"))
        (self.root / "alertmanager.yml").write_text(
            "route:\n"
            "  receiver: console-test\n"
            "  group_by: [alertname, cluster, group]\n"
            "  group_wait: 1s\n"
            "  group_interval: 1s\n"
            "  repeat_interval: 1h\n"
            "receivers:\n"
            "  - name: console-test\n"
            f"    webhook_configs: [{{url: {json.dumps(webhook_url)}, send_resolved: true}}]\n"
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = ManagedProcess(
            "alertmanager",
            [
                BINARY,
                f"--config.file={self.root / 'alertmanager.yml'}",
                f"--storage.path={self.root / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",  # one instance: no gossip port
            ],  # fmt: skip
            log_path=self.root / "alertmanager.log",
        )
        self.process.wait_for_log("Listening", timeout=60)

    def alerts(self) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts?active=true&silenced=true&inhibited=true",
                                    timeout=10) as response:  # fmt: skip
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.stop(grace=5)
        shutil.rmtree(self.root, ignore_errors=True)
