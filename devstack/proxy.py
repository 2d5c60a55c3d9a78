"""A local rocketmq-proxy in cluster mode (its own JVM, as production runs it) beside a
LocalRocketMQ: the gRPC endpoint RocketMQ 5 SDK clients connect to, and a remoting port the
console reads their connections from (the brokers know no gRPC client in cluster mode).

The proxy has no bind-address setting: it listens on every interface. Only 127.0.0.1 is ever
used by the clients, the console and the tests.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import ManagedProcess, StartupError, free_port
from .runtime import Runtime

STARTUP_TIMEOUT = 120.0
START_ATTEMPTS = 3
log = logging.getLogger(__name__)


@dataclass
class LocalProxy:
    runtime: Runtime
    namesrv_addr: str
    base_dir: Path
    cluster: str  # the brokers' cluster, named in every setting that would default to another
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
        """Start the proxy and wait until both ports listen. The proxy creates its system topics
        at start (the heartbeat syncer's broadcast topic, on the brokers that carry a topic named
        after the cluster) and exits if a name server lookup times out on a loaded machine, so
        it starts only once that route answers, and a start that exits is tried again (said in
        the log) up to START_ATTEMPTS times."""
        config = self.base_dir / f"{self.name}.json"
        config.write_text(json.dumps(self._config()))
        self._wait_cluster_route()
        for attempt in range(1, START_ATTEMPTS + 1):
            exited = self._launch(config)
            if exited is None:
                return self
            if attempt == START_ATTEMPTS:
                raise StartupError(f"{self.name} exited at start {attempt} times; the last:\n{exited}")
            log.warning("%s exited at start (attempt %d of %d), trying again: %s", self.name, attempt,
                        START_ATTEMPTS, _last_error(exited))  # fmt: skip
            time.sleep(2.0 * attempt)
        raise AssertionError("unreachable")

    def _config(self) -> dict:
        # Every setting the proxy would otherwise default to a cluster called DefaultCluster names
        # the brokers' own cluster: the brokers it serves and the cluster its heartbeat syncer
        # creates its broadcast topic on (which follows the first only when left blank).
        return {
            "rocketMQClusterName": self.cluster,
            "heartbeatSyncerTopicClusterName": self.cluster,
            "proxyClusterName": "local-proxies",
            "proxyName": self.name,
            "namesrvAddr": self.namesrv_addr,
            "proxyMode": "cluster",
            "grpcServerPort": self.grpc_port,
            "remotingListenPort": self.remoting_port,
        }

    def _launch(self, config: Path) -> str | None:
        """One start: None once both ports listen, or the log's tail when the process exited."""
        self.process = ManagedProcess(
            self.name,
            self.runtime.java(
                "org.apache.rocketmq.proxy.ProxyStartup",
                ["-pc", str(config)],
                home=self.base_dir / f"{self.name}-home",
                heap="512m",
                extra=["-Xms256m", "-Drmq.logback.configurationFile=rmq.proxy.logback.xml"],
            ),
            log_path=self.base_dir / f"{self.name}.out",
            cwd=self.base_dir,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not (_listening(self.grpc_port) and _listening(self.remoting_port)):
            if not self.process.alive():
                tail = self.process.log_tail()
                self.stop(5)
                return tail
            if time.monotonic() > deadline:
                self.stop()
                raise StartupError(f"{self.name} not listening after {STARTUP_TIMEOUT:.0f}s")
            time.sleep(0.5)
        return None

    def _wait_cluster_route(self) -> None:
        """Until the name server answers the route of the topic named after the cluster with a
        broker in it: what the proxy's system-topic creation reads first."""
        from consumers.rocketmq import AdminClient, RocketMQError

        from .rocketmq import run_coroutine

        async def answered() -> bool:
            async with AdminClient(self.namesrv_addr, request_timeout=3.0) as client:
                try:
                    return bool((await client.topology.topic_route(self.cluster)).broker_datas)
                except (RocketMQError, OSError, TimeoutError):
                    return False

        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not run_coroutine(answered):
            if time.monotonic() > deadline:
                raise StartupError(f"no route for cluster {self.cluster} at {self.namesrv_addr} "
                                   f"after {STARTUP_TIMEOUT:.0f}s")  # fmt: skip
            time.sleep(0.5)

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


def _last_error(log_tail: str) -> str:
    errors = [line for line in log_tail.splitlines() if "Exception" in line or "ERROR" in line]
    return (errors or log_tail.splitlines() or ["(no output)"])[-1].strip()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
