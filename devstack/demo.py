"""The demo: a local RocketMQ with realistic traffic, Redis, Celery worker and beat, and Django.

Everything runs as children of one process (`python -m devstack.demo`); they die with it,
also when it is killed. Ctrl-C, SIGTERM or `python -m devstack.demo --stop` stops them in
order. The state file (VAR_DIR/demo/demo.json) says what runs where. The environment it gives
the console is demo_environment.py's; the topics, traffic, alert rules and grants it shows are
demo_seed.py's.

This is development tooling: it is not a Django app and production code never imports it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import secrets
import select
import signal
import sys
import time
import urllib.request
from pathlib import Path

import django

from . import demo_seed
from .demo_environment import production_like_environment, sso_environment, sso_requested
from .keycloak import ADMIN_PASSWORD
from .processes import ManagedProcess, StartupError, free_port, port_is_free
from .proxy import LocalProxy
from .redis import ensure_local_redis
from .rocketmq import LocalRocketMQ
from .runtime import PROJECT_ROOT, ensure_runtime
from .traffic import Harness

ROLES_FOR_DEMO = ("viewer", "operator", "approver", "admin")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


production_like_environment()
KEYCLOAK_PORT = sso_environment() if sso_requested() else None
django.setup()

from django.conf import settings  # noqa: E402  (after django.setup)

STATISTICS_AFTER_SECONDS = 90  # about six polls of history first
# the demo's supervisor starts these again when they die (production: systemd, docs/deployment.md)
SUPERVISED = ("celery-worker", "celery-beat")
RESTARTS_PER_MINUTE = 3


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
        self.proxy: LocalProxy | None = None
        self._commands: dict[str, tuple[list[str], dict]] = {}
        self._restarts: dict[str, list[float]] = {}
        self._stopping = False
        self.statistics: ManagedProcess | None = None  # the one statistics run at start-up
        self.keycloak = None  # with --sso
        self.started_at = time.monotonic()

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
            metrics=True,
        ).start()
        self.log("Starting rocketmq-proxy (cluster mode) for the RocketMQ 5 gRPC clients ...")
        self.proxy = LocalProxy(
            runtime, self.rocketmq.namesrv_addr, self.base / "proxy", cluster=self.rocketmq.cluster
        ).start()
        if KEYCLOAK_PORT:
            from .keycloak import LocalKeycloak, ensure_keycloak

            self.log("Starting Keycloak (single sign-on; the console realm's teams and users) ...")
            self.keycloak = LocalKeycloak(ensure_keycloak(log=self.log), port=KEYCLOAK_PORT).start()
            if self.http_port != 8000:  # the realm file names the console at :8000 for logout tokens
                self.keycloak.set_backchannel_logout(f"http://127.0.0.1:{self.http_port}/oidc/backchannel-logout/")
        call_command("migrate", verbosity=0)
        users = self._prepare_database()
        self.log(
            "Starting traffic: producers and healthy, slow, failing, stalled, stopped, broadcasting, orderly groups ..."
        )
        self.harness = Harness(runtime, self.rocketmq.namesrv_addr, self.base / "harness", name="demo-traffic")
        demo_seed.start_traffic(self.harness, self.rocketmq)
        demo_seed.start_grpc_traffic(self.harness, self.proxy)
        self.log("Starting the Celery worker and beat, and Django ...")
        environment = {**os.environ, "ROCKETMQ_NAMESRV": self.rocketmq.namesrv_addr, "PYTHONUNBUFFERED": "1"}
        # the demo knows where it serves the console: its alerts link there
        environment["CONSOLE_BASE_URL"] = os.environ.get("CONSOLE_BASE_URL") or f"http://127.0.0.1:{self.http_port}"
        # `rocketmq-console` as the systemd units run it, from the checkout (dashboard/cli.py). The
        # worker has the prefork pool, production's: tasks run in forked processes, and the task
        # time limits (CELERY_TASK_*TIME_LIMIT) apply (not in the threads pool)
        console = [sys.executable, "-m", "dashboard.cli"]
        self._spawn("celery-worker", [*console, "worker", "--concurrency", "2"], environment)
        self._spawn("celery-beat", [*console, "beat"], environment)  # its schedule is in Redis
        # the static files with hashed names, compressed: here, before the server, because
        # compressing plotly.js takes tens of seconds on a loaded machine (unchanged files are skipped)
        call_command("collectstatic", interactive=False, verbosity=0)
        # gunicorn, gthread: a thread per connection, kept alive between requests (htmx refreshes
        # reuse it)
        web = self._spawn(
            "web",
            [*console, "serve", "--bind", f"127.0.0.1:{self.http_port}", "--workers", "2", "--threads", "4",
             "--graceful-timeout", "5", "--no-collectstatic"],
            environment,
        )  # fmt: skip
        web.wait_until(lambda: _answers(f"http://127.0.0.1:{self.http_port}/login/"), 180, "the login page answers")
        self._write_state()
        self.started_at = time.monotonic()
        return users

    def _statistics_once(self) -> None:
        """A statistics run over the demo's first polls (today, so far), so the Statistics page
        has something to draw; the nightly run takes over from there."""
        if self.statistics is None and time.monotonic() - self.started_at > STATISTICS_AFTER_SECONDS:
            self.log("Computing today's statistics so far with spark-submit (once; nightly after that) ...")
            self.statistics = ManagedProcess(
                "statistics",
                [sys.executable, "manage.py", "spark_stats", "--date", time.strftime("%Y-%m-%d", time.gmtime())],
                log_path=self.base / "statistics.log",
                cwd=PROJECT_ROOT,
            )
        elif self.statistics is not None and self.statistics.popen.returncode is None and not self.statistics.alive():
            ok = self.statistics.popen.returncode == 0
            self.log("Statistics ready: see Statistics in the console." if ok else
                     f"The statistics run failed; see {self.statistics.log_path}")  # fmt: skip

    def _spawn(self, name: str, args: list[str], environment: dict) -> ManagedProcess:
        process = ManagedProcess(name, args, log_path=self.base / f"{name}.log", cwd=PROJECT_ROOT, env=environment)
        self.processes.append(process)
        self._commands[name] = (args, environment)
        return process

    def _supervise(self, process: ManagedProcess) -> bool:
        """Start a dead worker or beat again, as systemd's Restart=always would in production
        (docs/deployment.md); at most RESTARTS_PER_MINUTE times a minute. False: give up."""
        now = time.monotonic()
        recent = [t for t in self._restarts.get(process.name, []) if now - t < 60]
        if process.name not in SUPERVISED or len(recent) >= RESTARTS_PER_MINUTE:
            return False
        self._restarts[process.name] = [*recent, now]
        args, environment = self._commands[process.name]
        self.processes.remove(process)
        self._spawn(process.name, args, environment)
        self.log(f"{process.name} exited ({process.popen.returncode}); started it again (see {process.log_path})")
        self._write_state()
        return True

    def _prepare_database(self) -> dict[str, str]:
        from consumers.identity import create_or_update_user, ensure_roles
        from consumers.models import Cluster

        ensure_roles()
        Cluster.objects.update_or_create(
            name=settings.ROCKETMQ_DEFAULT_CLUSTER_NAME,
            defaults={
                "namesrv_addrs": self.rocketmq.namesrv_addr,
                "proxy_addrs": self.proxy.remoting_address,
                "broker_metrics": self.rocketmq.metrics_urls,
                "poll_interval": settings.ROCKETMQ_POLL_INTERVAL,
            },
        )
        demo_seed.alert_rules()
        if self.keycloak:
            demo_seed.team_grants()
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
            "proxy": {"grpc": self.proxy.grpc_endpoint, "remoting": self.proxy.remoting_address},
            "redis": settings.REDIS_URL,
            "redis_started": self.redis is not None,
            "keycloak": self.keycloak.issuer if self.keycloak else None,
            "children": {p.name: p.pid for p in self._all_processes()},
        }
        # whole or not at all: `--stop` and the tests read it while a restart rewrites it
        path = state_file()
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(state, indent=2))
        os.replace(partial, path)

    def _all_processes(self) -> list[ManagedProcess]:
        found = list(self.processes)
        if self.harness:
            found.append(self.harness.process)
        if self.proxy and self.proxy.process:
            found.append(self.proxy.process)
        if self.rocketmq:
            found += self.rocketmq.processes()
        if self.redis:
            found.append(self.redis.process)
        if self.statistics:
            found.append(self.statistics)
        if self.keycloak and self.keycloak.process:
            found.append(self.keycloak.process)
        return found

    def run_until_stopped(self) -> None:
        def request_stop(signum, frame):
            self._stopping = True

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        down: set[str] = set()
        interactive = sys.stdin.isatty()
        while not self._stopping:
            self._statistics_once()
            for process in list(self.processes):
                if not process.alive() and not self._supervise(process):
                    self.log(f"{process.name} exited ({process.popen.returncode}); see {process.log_path}")
                    self._stopping = True
            for name, broker in self.rocketmq.brokers.items():
                if name not in down and (broker.process is None or not broker.process.alive()):
                    down.add(name)
                    self.log(
                        f"{name} is down. The console shows it as missing (cluster degraded) and keeps its "
                        "queues with their last known values. "
                        + ("Press Enter here to restart it." if interactive else "Restart the demo to bring it back.")
                    )
            if down and interactive and _enter_pressed(0.5):
                for name in sorted(down):
                    self.log(f"Restarting {name} ...")
                    self.rocketmq.stop_broker(name, grace=1)
                    self.rocketmq.start_broker(name)
                    self.log(f"{name} is back; the console shows it fresh within two polls.")
                down.clear()
            elif not (down and interactive):
                time.sleep(0.5)

    def stop(self, seconds: float = 6.0) -> None:
        """Stop everything within about `seconds`: all processes are asked at once (SIGTERM) and
        killed when the time is up. Demo data is throwaway, so nothing waits for a clean flush."""
        self.log("Stopping ...")
        processes = [p for p in self._all_processes() if p is not None]
        for process in processes:
            process.signal(signal.SIGTERM)
        deadline = time.monotonic() + seconds
        for process in processes:
            process.stop(max(0.1, deadline - time.monotonic()))
        state_file().unlink(missing_ok=True)
        if self.keycloak:
            self.keycloak.discard()
        self.log("Stopped.")


def _enter_pressed(timeout: float) -> bool:
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    return bool(ready) and sys.stdin.readline() is not None


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
        # the demo removes its state file as the last step of stopping; a process that is gone
        # (or a zombie its parent has not reaped yet) has stopped too
        if not path.exists() or not _running(pid):
            return True
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)  # its children die with it (PR_SET_PDEATHSIG)
    return True


def announce(demo: Demo, users: dict[str, str]) -> str:
    lines = [
        "",
        "Demo ready.",
        f"  Console      http://127.0.0.1:{demo.http_port}/   (log in as one of these users)",
    ]
    lines += [f"    {role:<9} password {password}" for role, password in users.items()]
    lines += [
        f"  RocketMQ     name server {demo.rocketmq.namesrv_addr}, brokers "
        + ", ".join(f"{n} {b.address}" for n, b in demo.rocketmq.brokers.items()),
        f"  Proxy        gRPC {demo.proxy.grpc_endpoint}, remoting {demo.proxy.remoting_address} (cluster mode)",
        f"  Redis        {settings.REDIS_URL}{' (started by the demo)' if demo.redis else ''}",
        "  Celery       worker (prefork pool, 2 processes) and beat: a poll every "
        f"{settings.ROCKETMQ_POLL_INTERVAL} s; logs in {demo.base}",
        f"  State        {state_file()}",
        *_sso_lines(demo),
        "Stop with Ctrl-C, or `make stop` (python -m devstack.demo --stop) from another terminal.",
        "",
    ]
    return "\n".join(lines)


def _sso_lines(demo: Demo) -> list[str]:
    if not demo.keycloak:
        return []
    lines = [f"  Keycloak     {demo.keycloak.url}/admin/ (admin / {ADMIN_PASSWORD}); single sign-on users, each "
             "the operator of its team's groups (Grants in the admin), nothing without a team:"]  # fmt: skip
    for name, user in demo.keycloak.users.items():
        teams = ", ".join(group.strip("/") for group in user["groups"]) or "no team"
        lines.append(f"    {name:<9} password {user['password']}  ({teams})")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m devstack.demo",
        description="Run the demo: local RocketMQ with traffic, Redis, Celery worker and beat, and Django. "
        "Ctrl-C stops it.",
    )
    parser.add_argument("--stop", action="store_true", help="stop a demo running in another terminal")
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument("--namesrv-port", type=int, default=9876, help="used if free, else a free port")
    parser.add_argument("--broker-port", type=int, default=10911, help="used if free, else a free port")
    parser.add_argument("--sso", action="store_true", help="also start Keycloak for single sign-on (or DEMO_SSO=1)")
    args = parser.parse_args(argv)
    if args.stop:
        print("Demo stopped." if stop_running_demo() else "No demo is running.", flush=True)
        return
    log = functools.partial(print, flush=True)
    demo = Demo(http_port=args.http_port, namesrv_port=args.namesrv_port, broker_port=args.broker_port, log=log)
    try:
        users = demo.start()
        log(announce(demo, users))
        demo.run_until_stopped()
    finally:
        demo.stop()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


if __name__ == "__main__":
    main()
