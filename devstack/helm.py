"""helm, built from the Go module proxy (no release downloads are reachable here) with the
machine's Go, into .cache/bin once: what the chart's tests render deploy/helm/ with."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from devstack.processes import low_priority

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "deploy" / "helm" / "rocketmq-console"
MODULE = "helm.sh/helm/v4/cmd/helm@v4.3.2"  # the Go proxy's helm v4 (v3.22.0 there is not approved)
BIN = ROOT / ".cache" / "bin"


def ensure_helm() -> Path:
    """The helm binary, built if missing (about 2 minutes on two cores; one build at a time)."""
    helm = BIN / "helm"
    BIN.mkdir(parents=True, exist_ok=True)
    with open(BIN / ".helm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not helm.is_file():
            go = shutil.which("go") or "/usr/local/go/bin/go"
            if not Path(go).is_file():
                raise RuntimeError("helm is built with Go, which is not installed")
            environment = {**os.environ, "GOBIN": str(BIN), "GOFLAGS": "-mod=mod"}
            command = low_priority([go, "install", MODULE])
            built = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=1200)
            if built.returncode != 0:
                raise RuntimeError(f"go install {MODULE} failed:\n{built.stderr[-4000:]}")
    return helm


def helm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(ensure_helm()), *args], capture_output=True, text=True, timeout=timeout)


if __name__ == "__main__":  # python -m devstack.helm: build it now (scripts/test.sh does, in the background)
    print(ensure_helm())
