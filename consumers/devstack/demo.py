"""The demo: a local RocketMQ with realistic traffic, Redis, Celery worker and beat, and Django.

Everything runs as children of one process (`python manage.py demo`); they die with it,
also when it is killed. Ctrl-C, SIGTERM or `python manage.py demo --stop` stops them in
order. The state file (VAR_DIR/demo/demo.json) says what runs where.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings

from .processes import ManagedProcess, StartupError, free_port, port_is_free
from .redis import ensure_local_redis
from .rocketmq import LocalRocketMQ
from .runtime import PROJECT_ROOT, ensure_runtime
from .traffic import Harness

ROLES_FOR_DEMO = ("viewer", "operator", "approver", "admin")


def state_file() -> Path:
    return Path(settings.VAR_DIR) / "demo" / "demo.json"


def _port(preferred: int, *, also_free=()) -> int:
    if all(port_is_free(p) for p in (preferred, *(preferred + o for o in also_free))):
        return preferred
    return free_port(also_free=also_free)


class Demo:
    def __init__(self, *, http_port: int = 8000, namesrv_port: int = 9876, broker_port: int = 10911, log=print):
        self.log = log
        self.base = Path(settings.VAR_DIR) / "demo"
        self.http_port = http_port
        self.namesrv_port = _port(namesrv_port)
        self.broker_ports = {"broker-a": _port(broker_port, also_free=(-2, 1))}
        self.broker_ports["broker-b"] = _port(broker_port + 100, also_free=(-2, 1))
        self.processes: list[ManagedProcess] = []
        self.rocketmq: LocalRocketMQ | None = None
        self.redis = None
        self.harness: Harness | None = None
        self._stopping = False

    def start(self) -> dict[str, str]:
        from django.core.management import call_command

        if not port_is_free(self.http_port):
            raise StartupError(f"port {self.http_port} is taken: pass --http-port")
        self.base.mkdir(parents=True, exist_ok=True)
        runtime = ensure_runtime(log=self.log)
        self.log("Starting Redis (if needed), RocketMQ (name server + 2 brokers) ...")
        self.redis = ensure_local_redis(settings.REDIS_URL, self.base / "redis")
        self.rocketmq = LocalRocketMQ(
            runtime,
            broker_names=("broker-a", "broker-b"),
            base_dir=self.base / "rocketmq",
            namesrv_port=self.namesrv_port,
            broker_ports=self.broker_ports,
        ).start()
        call_command("migrate", verbosity=0)
        users = self._prepare_database()
        self.log(
            "Starting traffic: producers and healthy, slow, failing, stalled, stopped, broadcasting, orderly groups ..."
        )
        self.harness = Harness(runtime, self.rocketmq.namesrv_addr, self.base / "harness", name="demo-traffic")
        _start_traffic(self.harness, self.rocketmq)
        self.log("Starting the Celery worker and beat, and Django ...")
        environment = {**os.environ, "ROCKETMQ_NAMESRV": self.rocketmq.namesrv_addr, "PYTHONUNBUFFERED": "1"}
        python = sys.executable
        celery = [python, "-m", "celery", "-A", "dashboard"]
        self._spawn(
            "celery-worker", [*celery, "worker", "-l", "info", "--pool", "threads", "-c", "4", "-E"], environment
        )
        self._spawn(
            "celery-beat", [*celery, "beat", "-l", "info", "-s", str(self.base / "celerybeat-schedule")], environment
        )
        web = self._spawn(
            "django", [python, "manage.py", "runserver", f"127.0.0.1:{self.http_port}", "--noreload"], environment
        )
        web.wait_until(lambda: _answers(f"http://127.0.0.1:{self.http_port}/login/"), 90, "the login page answers")
        self._write_state()
        return users

    def _spawn(self, name: str, args: list[str], environment: dict) -> ManagedProcess:
        process = ManagedProcess(name, args, log_path=self.base / f"{name}.log", cwd=PROJECT_ROOT, env=environment)
        self.processes.append(process)
        return process

    def _prepare_database(self) -> dict[str, str]:
        from consumers.models import Cluster
        from consumers.services.users import create_or_update_user, ensure_roles

        ensure_roles()
        Cluster.objects.update_or_create(
            name=settings.ROCKETMQ_DEFAULT_CLUSTER_NAME,
            defaults={"namesrv_addrs": self.rocketmq.namesrv_addr, "poll_interval": settings.ROCKETMQ_POLL_INTERVAL},
        )
        users = {}
        for role in ROLES_FOR_DEMO:
            password = f"demo-{role}-{secrets.token_hex(3)}"
            create_or_update_user(role, role, password, update=True, validate=False)
            users[role] = password
        return users

    def _write_state(self) -> None:
        state = {
            "pid": os.getpid(),
            "url": f"http://127.0.0.1:{self.http_port}/",
            "namesrv": self.rocketmq.namesrv_addr,
            "brokers": {n: b.address for n, b in self.rocketmq.brokers.items()},
            "redis": settings.REDIS_URL,
            "redis_started": self.redis is not None,
            "children": {p.name: p.pid for p in self._all_processes()},
        }
        state_file().write_text(json.dumps(state, indent=2))

    def _all_processes(self) -> list[ManagedProcess]:
        found = list(self.processes)
        if self.harness:
            found.append(self.harness.process)
        if self.rocketmq:
            found += self.rocketmq.processes()
        if self.redis:
            found.append(self.redis.process)
        return found

    def run_until_stopped(self) -> None:
        def request_stop(signum, frame):
            self._stopping = True

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        while not self._stopping:
            for process in self.processes:
                if not process.alive():
                    self.log(f"{process.name} exited ({process.popen.returncode}); see {process.log_path}")
                    self._stopping = True
            time.sleep(0.5)

    def stop(self) -> None:
        self.log("Stopping ...")
        for process in reversed(self.processes):
            process.stop(20)
        if self.harness:
            self.harness.close()
        if self.rocketmq:
            self.rocketmq.stop()
        if self.redis:
            self.redis.stop()
        state_file().unlink(missing_ok=True)
        self.log("Stopped.")


def _start_traffic(harness: Harness, rocketmq: LocalRocketMQ) -> None:
    """Topics and groups that show every state the console knows."""
    import asyncio

    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import TopicConfig

    async def create_topics():
        async with AdminClient(rocketmq.namesrv_addr) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            for topic, queues in (("orders", 4), ("payments", 2), ("audit-log", 1)):
                await client.actions.create_or_update_topic(TopicConfig(topic, queues, queues), masters)

    asyncio.run(create_topics())
    quiet = {"quiet": True}
    harness.produce("orders", -1, rate=20, wait=False, binaryEvery=9, largeEvery=13, **quiet)
    harness.produce("payments", -1, rate=5, wait=False, **quiet)
    harness.produce("audit-log", -1, rate=2, wait=False, **quiet)
    harness.consume("orders-service", "orders", **quiet)
    # one thread sleeping 100 ms a message: 10/s against 20/s produced, so it falls behind
    harness.consume("orders-analytics", "orders", threads=1, sleepMs=100, **quiet)
    harness.consume("orders-fulfilment", "orders", mode="stalled", **quiet)
    harness.consume("payments-worker", "payments", mode="failing", failEvery=10, maxReconsumeTimes=2, **quiet)
    harness.consume("payments-ledger", "payments", orderly=True, **quiet)
    for i in range(2):
        harness.consume("audit-mirror", "audit-log", model="BROADCASTING", instanceName=f"mirror-{i}", **quiet)
    # consumes a while, then goes away for good: STOPPED with a growing lag
    billing = harness.consume("billing-legacy", "payments", **quiet)
    time.sleep(3)
    billing.stop()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def stop_running_demo(timeout: float = 120.0) -> bool:
    """Ask the running demo to stop and wait for it; False when none runs."""
    path = state_file()
    if not path.exists():
        return False
    pid = json.loads(path.read_text())["pid"]
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        path.unlink(missing_ok=True)
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)  # its children die with it (PR_SET_PDEATHSIG)
    return True
