"""The Java side of the local stack: RocketMQ jars from Maven Central and our harness jar.

`ensure_runtime()` builds harness/ with Maven into a git-ignored cache folder (.cache/ by
default, or $RMQ_CACHE_DIR), with its own local Maven repository there. It runs Maven only
when the pom or the Java sources changed since the last build (a stamp holds their hash), so
after the first run everything works offline. A file lock keeps parallel runs from racing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROCKETMQ_VERSION = "5.3.3"
# RocketMQ 5's own Java SDK (gRPC, through rocketmq-proxy), for the harness's gRPC consumers
GRPC_CLIENT = "org.apache.rocketmq:rocketmq-client-java:5.0.7"
PROJECT_ROOT = Path(__file__).resolve().parents[1]
HARNESS_DIR = PROJECT_ROOT / "harness"

# Flags every RocketMQ JVM gets. The --add-opens set is what 4.9/5.1 need on JDK 17; 5.3
# does not, but it costs nothing. Timezone UTC makes mqadmin's printed times comparable.
JVM_FLAGS = [
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "-XX:-OmitStackTraceInFastThrow",
    "-Duser.timezone=UTC",
    "-Dtls.server.mode=disabled",
]


def cache_dir() -> Path:
    return Path(os.environ.get("RMQ_CACHE_DIR") or PROJECT_ROOT / ".cache")


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise RuntimeError("no java on PATH and no JAVA_HOME: install JDK 17")
    return found


@dataclass(frozen=True)
class Runtime:
    lib_dir: Path
    harness_jar: Path

    @property
    def grpc_dir(self) -> Path:
        """The gRPC SDK's shaded jar, on its own: it carries apache.rocketmq.v2 classes built
        against its shaded protobuf, which must come before the proxy's rocketmq-proto jar, and
        the proxy must never see them."""
        return self.lib_dir.parent / "lib-grpc"

    @property
    def classpath(self) -> str:
        return f"{self.harness_jar}{os.pathsep}{self.lib_dir}/*"

    def java(
        self, main_class: str, args: list[str], *, home: Path, heap: str = "256m", extra=(), grpc: bool = False
    ) -> list[str]:
        """A java command line for one of our JVMs, with user.home (logs, stores, client
        offsets) under `home` so every run is isolated; `grpc`: with the RocketMQ 5 SDK first."""
        classpath = (
            f"{self.harness_jar}{os.pathsep}{self.grpc_dir}/*{os.pathsep}{self.lib_dir}/*" if grpc else self.classpath
        )
        return [
            java_executable(),
            f"-Xmx{heap}",
            *JVM_FLAGS,
            f"-Duser.home={home}",
            f"-Drocketmq.home.dir={home}",
            f"-Drocketmq.client.logRoot={home}/logs",
            f"-Drocketmq.client.localOffsetStoreDir={home}/offsets",
            *extra,
            "-cp",
            classpath,
            main_class,
            *args,
        ]


def _fingerprint() -> str:
    digest = hashlib.sha256(ROCKETMQ_VERSION.encode())
    for path in sorted([HARNESS_DIR / "pom.xml", *HARNESS_DIR.glob("src/**/*.java")]):
        digest.update(str(path.relative_to(HARNESS_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_runtime(*, log=print) -> Runtime:
    root = cache_dir()
    target = root / f"rocketmq-{ROCKETMQ_VERSION}"
    runtime = Runtime(lib_dir=target / "lib", harness_jar=target / "harness.jar")
    stamp = target / "stamp"
    wanted = _fingerprint()
    if stamp.exists() and stamp.read_text() == wanted and runtime.harness_jar.exists():
        return runtime
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".runtime.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == wanted and runtime.harness_jar.exists():
            return runtime  # built by a parallel run while we waited
        log(f"Resolving Apache RocketMQ {ROCKETMQ_VERSION} and building the traffic harness with Maven ...")
        for folder in (runtime.lib_dir, runtime.grpc_dir):
            if folder.exists():
                shutil.rmtree(folder)
        command = [
            shutil.which("mvn") or "mvn",
            "-B",
            "-q",
            f"-Dmaven.repo.local={root / 'm2'}",
            "-f",
            str(HARNESS_DIR / "pom.xml"),
            "package",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={runtime.lib_dir}",
        ]
        grpc = [
            *command[:6],
            "dependency:copy",
            f"-Dartifact={GRPC_CLIENT}",
            f"-DoutputDirectory={runtime.grpc_dir}",
        ]
        for step in (command, grpc):
            result = subprocess.run(step, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(
                    f"Maven failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
                )
        shutil.copy2(HARNESS_DIR / "target" / "harness.jar", runtime.harness_jar)
        stamp.write_text(wanted)
    return runtime
