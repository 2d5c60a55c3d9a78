"""A local rocketmq-proxy in cluster mode (its own JVM, as production runs it) beside a
LocalRocketMQ: the gRPC endpoint RocketMQ 5 SDK clients connect to, and a remoting port the
console reads their connections from (the brokers know no gRPC client in cluster mode).

The proxy has no bind-address setting: it listens on every interface. Only 127.0.0.1 is ever
used by the clients, the console and the tests.
"""

from __future__ import annotations

import json
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import ManagedProcess, StartupError, free_port
from .runtime import Runtime

STARTUP_TIMEOUT = 120.0


@dataclass
class LocalProxy:
    runtime: Runtime
    namesrv_addr: str
    base_dir: Path
    cluster: str = "DefaultCluster"
    name: str = "proxy-0"
    grpc_port: int = 0
    remoting_port: int = 0
    process: ManagedProcess | None = None

    def __post_init__(self) -> None:
        self.base_dir = Path(self.base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.grpc_port = self.grpc_port or free_port()
        self.remoting_port = self.remoting_port or free_port()

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def remoting_address(self) -> str:
        return f"127.0.0.1:{self.remoting_port}"

    def start(self) -> LocalProxy:
        config = self.base_dir / f"{self.name}.json"
        config.write_text(
            json.dumps(
                {
                    "rocketMQClusterName": self.cluster,
                    "proxyClusterName": "local-proxies",
                    "proxyName": self.name,
                    "namesrvAddr": self.namesrv_addr,
                    "proxyMode": "cluster",
                    "grpcServerPort": self.grpc_port,
                    "remotingListenPort": self.remoting_port,
                }
            )
        )
        home = self.base_dir / f"{self.name}-home"
        self.process = ManagedProcess(
            self.name,
            self.runtime.java(
                "org.apache.rocketmq.proxy.ProxyStartup",
                ["-pc", str(config)],
                home=home,
                heap="512m",
                extra=["-Xms256m", "-Drmq.logback.configurationFile=rmq.proxy.logback.xml"],
            ),
            log_path=self.base_dir / f"{self.name}.out",
            cwd=self.base_dir,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not (_listening(self.grpc_port) and _listening(self.remoting_port)):
            if not self.process.alive():
                raise StartupError(f"{self.name} exited:\n{self.process.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise StartupError(f"{self.name} not listening after {STARTUP_TIMEOUT:.0f}s")
            time.sleep(0.5)
        return self

    def kill(self) -> None:
        """SIGKILL, as a crashed proxy host: its gRPC clients lose their endpoint."""
        if self.process is not None:
            self.process.signal(signal.SIGKILL)
            self.process.stop(5)
            self.process = None

    def stop(self, grace: float = 20.0) -> None:
        if self.process is not None:
            self.process.stop(grace)
            self.process = None


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
