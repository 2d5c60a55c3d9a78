"""A local Apache RocketMQ: one name server and one or more master brokers on 127.0.0.1.

Each start gets a fresh folder (store, logs, configs), retry delay levels of one second so
a failing message reaches the DLQ in seconds, and small mapped files. Readiness waits are
bounded and report the end of the process log when they fail.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .processes import ManagedProcess, StartupError, free_port
from .runtime import Runtime

STARTUP_TIMEOUT = 90.0

# Every comment in these files sits on its own line: java.util.Properties keeps an
# end-of-line "# ..." as part of the value, and the broker then drops the key silently.
BROKER_DEFAULTS = {
    "brokerRole": "ASYNC_MASTER",
    "flushDiskType": "ASYNC_FLUSH",
    "brokerIP1": "127.0.0.1",
    "brokerIP2": "127.0.0.1",
    "bindAddress": "127.0.0.1",
    # 64 MiB commit log files, small consume queues and index instead of 1 GiB / 420 MB defaults
    "mappedFileSizeCommitLog": "67108864",
    "mappedFileSizeConsumeQueue": "60000",
    "maxHashSlotNum": "10000",
    "maxIndexNum": "40000",
    "mappedFileSizeTimerLog": "16777216",
    "autoCreateTopicEnable": "true",
    "autoCreateSubscriptionGroup": "true",
    "defaultTopicQueueNums": "4",
    # 18 one-second levels: each retry hop takes about a second
    "messageDelayLevel": " ".join(["1s"] * 18),
    "storeType": "default",
    "useServerSideResetOffset": "true",
    "timerWheelEnable": "true",
    # the timer store's flush every 10 s instead of every second: an idle broker took 10 % of a
    # core, 4 of them in that flush; the brokers were a third of the test suite's CPU
    "timerFlushIntervalMs": "10000",
    "traceTopicEnable": "false",
}


@dataclass
class LocalBroker:
    name: str
    port: int
    store: Path
    process: ManagedProcess | None = None
    metrics_port: int | None = None  # its Prometheus endpoint, when the cluster exports metrics

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class LocalRocketMQ:
    runtime: Runtime
    broker_names: tuple[str, ...] = ("broker-a",)
    cluster: str = "DefaultCluster"
    base_dir: Path | None = None
    namesrv_port: int | None = None
    broker_ports: dict[str, int] = field(default_factory=dict)
    broker_config: dict[str, str] = field(default_factory=dict)
    brokers: dict[str, LocalBroker] = field(default_factory=dict)
    namesrv: ManagedProcess | None = None
    # each broker exports its own metrics (Prometheus text) on 127.0.0.1: POP messages in flight
    metrics: bool = False

    def __post_init__(self) -> None:
        self.base_dir = Path(self.base_dir or tempfile.mkdtemp(prefix="rmq-"))
        self.home = self.base_dir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.namesrv_port = self.namesrv_port or free_port()
        for name in self.broker_names:
            # a broker also listens on port-2 (fast remoting) and port+1 (HA)
            port = self.broker_ports.get(name) or free_port(also_free=(-2, 1))
            self.brokers[name] = LocalBroker(name=name, port=port, store=self.base_dir / "store" / name)
            if self.metrics:
                self.brokers[name].metrics_port = free_port()

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def metrics_urls(self) -> str:
        """The console's cluster setting for these brokers' metrics ("" without metrics)."""
        return "; ".join(
            f"{n}=http://127.0.0.1:{b.metrics_port}/metrics" for n, b in self.brokers.items() if b.metrics_port
        )

    def start(self) -> LocalRocketMQ:
        try:
            self._start_namesrv()
            for name in self.brokers:
                self.start_broker(name)
            self.wait_registered(set(self.brokers))
        except BaseException:
            self.stop()
            raise
        return self

    def _start_namesrv(self) -> None:
        config = self.base_dir / "namesrv.conf"
        _write_properties(config, {"listenPort": str(self.namesrv_port), "bindAddress": "127.0.0.1"})
        self.namesrv = ManagedProcess(
            "namesrv",
            self.runtime.java(
                "org.apache.rocketmq.namesrv.NamesrvStartup",
                ["-c", str(config)],
                home=self.home,
                heap="256m",
                extra=["-Drmq.logback.configurationFile=rmq.namesrv.logback.xml"],
            ),
            log_path=self.base_dir / "namesrv.out",
            cwd=self.base_dir,
        )
        self.namesrv.wait_for_log("The Name Server boot success", STARTUP_TIMEOUT)

    def start_broker(self, name: str) -> LocalBroker:
        broker = self.brokers[name]
        config = self.base_dir / f"{name}.conf"
        properties = {
            **BROKER_DEFAULTS,
            "brokerClusterName": self.cluster,
            "brokerName": name,
            "brokerId": "0",
            "namesrvAddr": self.namesrv_addr,
            "listenPort": str(broker.port),
            "haListenPort": str(broker.port + 1),
            "storePathRootDir": str(broker.store),
            **(
                {
                    "metricsExporterType": "PROM",
                    "metricsPromExporterHost": "127.0.0.1",
                    "metricsPromExporterPort": str(broker.metrics_port),
                }
                if broker.metrics_port
                else {}
            ),  # fmt: skip
            **self.broker_config,
        }
        _write_properties(config, properties)
        log_path = self.base_dir / f"{name}.out"
        offset = log_path.stat().st_size if log_path.exists() else 0
        broker.process = ManagedProcess(
            name,
            self.runtime.java(
                "org.apache.rocketmq.broker.BrokerStartup",
                ["-c", str(config)],
                home=self.home,
                heap="768m",
                extra=["-XX:MaxDirectMemorySize=512m", "-Drmq.logback.configurationFile=rmq.broker.logback.xml"],
            ),
            log_path=log_path,
            cwd=self.base_dir,
        )
        broker.process.wait_until(
            lambda: "boot success" in log_path.read_text(errors="replace")[offset:], STARTUP_TIMEOUT, "boot success"
        )
        return broker

    def stop_broker(self, name: str, *, grace: float = 30.0) -> None:
        broker = self.brokers[name]
        if broker.process is not None:
            broker.process.stop(grace)
            broker.process = None

    def kill_broker(self, name: str) -> None:
        """SIGKILL, as a crashed machine would: no deregistration, no flush."""
        broker = self.brokers[name]
        if broker.process is not None:
            broker.process.signal(signal.SIGKILL)
            broker.process.stop(5)
            broker.process = None

    def restart_namesrv(self) -> None:
        """Start the name server again on its port (the brokers re-register on their next heartbeat)."""
        if self.namesrv is not None:
            self.namesrv.stop()
        self._start_namesrv()

    def wait_registered(self, names: set[str], timeout: float = STARTUP_TIMEOUT) -> None:
        """Wait until the name server lists these brokers as live masters."""
        from consumers.rocketmq import AdminClient, RocketMQError

        async def registered() -> bool:
            async with AdminClient(self.namesrv_addr, request_timeout=3.0) as client:
                try:
                    masters = (await client.topology.cluster_info()).masters()
                except RocketMQError:
                    return False
                return all(masters.get(n) == self.brokers[n].address for n in names)

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if run_coroutine(registered):
                return
            time.sleep(0.2)
        raise StartupError(f"brokers {sorted(names)} not registered with {self.namesrv_addr} after {timeout:.0f}s")

    def processes(self) -> list[ManagedProcess]:
        found = [b.process for b in self.brokers.values() if b.process]
        return found + ([self.namesrv] if self.namesrv else [])

    def stop(self) -> None:
        for name in self.brokers:
            self.stop_broker(name)
        if self.namesrv is not None:
            self.namesrv.stop()
            self.namesrv = None

    def discard(self) -> None:
        """Kill every process at once (SIGKILL, no flush): for a throwaway cluster whose data
        nobody reads again, as at the end of a test session. A graceful stop takes a broker
        several seconds."""
        processes = [b.process for b in self.brokers.values() if b.process is not None]
        processes += [self.namesrv] if self.namesrv is not None else []
        for process in processes:
            process.signal(signal.SIGKILL)
        for process in processes:
            process.stop(5)
        for broker in self.brokers.values():
            broker.process = None
        self.namesrv = None

    def __enter__(self) -> LocalRocketMQ:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def run_coroutine(factory):
    """asyncio.run(factory()), also from a thread whose event loop is already running (such
    as one Playwright's sync API drives): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _write_properties(path: Path, values: dict[str, str]) -> None:
    for key, value in values.items():
        if "\n" in value or value != value.strip():
            raise ValueError(f"property {key} has surrounding whitespace or a newline: {value!r}")
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
