"""The demo: a local RocketMQ with realistic traffic, Redis, Celery worker and beat, and Django.

Everything runs as children of one process (`python -m devstack.demo`); they die with it,
also when it is killed. Ctrl-C, SIGTERM or `python -m devstack.demo --stop` stops them in
order. The state file (VAR_DIR/demo/demo.json) says what runs where.

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

from .keycloak import ADMIN_PASSWORD
from .processes import ManagedProcess, StartupError, free_port, port_is_free
from .proxy import LocalProxy
from .redis import ensure_local_redis
from .rocketmq import LocalRocketMQ
from .runtime import PROJECT_ROOT, ensure_runtime
from .traffic import Harness

ROLES_FOR_DEMO = ("viewer", "operator", "approver", "admin")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


def _sso_requested() -> bool:
    """`--sso` or DEMO_SSO=1: Keycloak as the demo's identity provider. Read before the settings
    are (at import), since they name the issuer."""
    return "--sso" in sys.argv[1:] or os.environ.get("DEMO_SSO", "").lower() in ("1", "true", "yes")


def _sso_environment() -> int:
    """The console's single sign-on settings for the demo's Keycloak; its port."""
    from .keycloak import console_client

    port = int(os.environ.get("DEMO_KEYCLOAK_PORT") or 0) or (8180 if port_is_free(8180) else free_port())
    client = console_client()
    os.environ.setdefault("OIDC_ISSUER", f"http://127.0.0.1:{port}/realms/console")
    os.environ.setdefault("OIDC_CLIENT_ID", client["clientId"])
    os.environ.setdefault("OIDC_CLIENT_SECRET", client["secret"])
    return port


def _production_like_environment() -> None:
    """The demo runs as production does: DEBUG off, gunicorn, collected static files with
    hashed names. What differs is only what plain HTTP on loopback needs: no HTTPS redirect,
    no HSTS, cookies without the Secure flag, and a secret key made once and kept in VAR_DIR.
    Its children (web server, Celery worker and beat, statistics run) inherit this environment."""
    var = Path(os.environ.get("VAR_DIR") or PROJECT_ROOT / "var") / "demo"
    os.environ["DEBUG"] = "false"
    if not os.environ.get("SECRET_KEY"):
        key_file = var / "secret-key"
        if not key_file.exists():
            var.mkdir(parents=True, exist_ok=True)
            key_file.write_text(secrets.token_urlsafe(50))
            key_file.chmod(0o600)
        os.environ["SECRET_KEY"] = key_file.read_text().strip()
    for name, value in {"SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0", "SESSION_COOKIE_SECURE": "false",
                        "CSRF_COOKIE_SECURE": "false", "STATIC_MANIFEST": "true",
                        "STATIC_ROOT": str(var / "static")}.items():  # fmt: skip
        os.environ.setdefault(name, value)


_production_like_environment()
KEYCLOAK_PORT = _sso_environment() if _sso_requested() else None
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
        call_command("migrate", verbosity=0)
        users = self._prepare_database()
        self.log(
            "Starting traffic: producers and healthy, slow, failing, stalled, stopped, broadcasting, orderly groups ..."
        )
        self.harness = Harness(runtime, self.rocketmq.namesrv_addr, self.base / "harness", name="demo-traffic")
        _start_traffic(self.harness, self.rocketmq)
        _start_grpc_traffic(self.harness, self.proxy)
        self.log("Starting the Celery worker and beat, and Django ...")
        environment = {**os.environ, "ROCKETMQ_NAMESRV": self.rocketmq.namesrv_addr, "PYTHONUNBUFFERED": "1"}
        # the demo knows where it serves the console: its alerts link there
        environment["CONSOLE_BASE_URL"] = os.environ.get("CONSOLE_BASE_URL") or f"http://127.0.0.1:{self.http_port}"
        # `rocketmq-console` as the systemd units run it, from the checkout (dashboard/cli.py). The
        # worker has the prefork pool, production's: tasks run in forked processes, and the task
        # time limits (CELERY_TASK_*TIME_LIMIT) apply (not in the threads pool)
        console = [sys.executable, "-m", "dashboard.cli"]
        self._spawn("celery-worker", [*console, "worker", "--concurrency", "2"], environment)
        schedule = str(self.base / "celerybeat-schedule")
        self._spawn("celery-beat", [*console, "beat", "--schedule", schedule], environment)
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
        _demo_alert_rules()
        if self.keycloak:
            _demo_team_grants()
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


def _demo_alert_rules() -> None:
    """Rules to show on the Alerts page (no channel: an admin adds webhooks, mail, Alertmanager)."""
    from consumers.alerts.models import AlertRule

    # the demo's traffic starts, stops and fails on purpose, on a loaded machine: a state must hold
    # a minute to fire and be gone five to resolve, or the page fills with fire/resolve pairs
    calm = {"for_seconds": 60, "keep_firing_seconds": 300}
    rules = {
        "groups stopped, stalled or losing messages": {"condition": "state", "severity": "critical",
                                                       "states": ["STOPPED", "STALLED", "OFFSET_EXPIRED"], **calm},
        "rebalance storms and retry storms": {"condition": "state", "states": ["REBALANCE_STORM", "RETRY_STORM"],
                                              **calm},
        "a broker missing or not answering": {"condition": "broker_missing", "severity": "critical", **calm},
    }  # fmt: skip
    for name, fields in rules.items():
        AlertRule.objects.get_or_create(name=name, defaults=fields)


def _enter_pressed(timeout: float) -> bool:
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    return bool(ready) and sys.stdin.readline() is not None


# with --sso: the Keycloak teams' grants (devstack/keycloak/console-realm.json), each team the
# operator of its own groups and topics; the local approver and admin approve their requests
DEMO_TEAM_GRANTS = {
    "payments": {"groups": "payments-* billing-*", "topics": "payments"},
    "orders": {"groups": "orders-*", "topics": "orders"},
}


def _demo_team_grants() -> None:
    from consumers.identity import Grant

    for team, scope in DEMO_TEAM_GRANTS.items():
        Grant.objects.update_or_create(
            subject_kind=Grant.Subject.IDP_GROUP, subject=team, role="operator",
            defaults={"clusters": "*", **scope, "note": "the demo's team"},
        )  # fmt: skip


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


def _start_grpc_traffic(harness: Harness, proxy: LocalProxy) -> None:
    """RocketMQ 5 consumers on "shipments": through the proxy (gRPC SDK, POP) a healthy
    SimpleConsumer and PushConsumer, a slow SimpleConsumer that leaves two messages in three
    unacked (in flight), one whose every delivery fails (max attempts 2, then the DLQ) and a
    FIFO one (consumeMessageOrderly); and a classic remoting consumer switched to POP."""
    from consumers.rocketmq import AdminClient
    from consumers.rocketmq.models import SubscriptionGroupConfig, TopicConfig

    async def prepare():
        async with AdminClient(proxy.namesrv_addr) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            config = TopicConfig("shipments", 2, 2, attributes={"message.type": "NORMAL"})
            await client.actions.create_or_update_topic(config, masters)
            for group in (SubscriptionGroupConfig("shipments-failing", retry_max_times=1),
                          SubscriptionGroupConfig("shipments-sequencer", consume_message_orderly=True)):  # fmt: skip
                await client.actions.create_or_update_subscription_group(group, masters)
            await client.actions.set_pop_mode("shipments", "shipments-popper", masters)

    import asyncio

    asyncio.run(prepare())
    harness.produce("shipments", -1, rate=10, wait=False, quiet=True)
    for group, kind, mode in (
        ("shipments-tracker", "simple", "healthy"),
        ("shipments-notifier", "push", "healthy"),
        ("shipments-audit", "simple", "slow"),
        ("shipments-failing", "simple", "failing"),
        ("shipments-sequencer", "simple", "healthy"),
    ):
        harness.grpc_consume(proxy.grpc_endpoint, group, "shipments", kind=kind, mode=mode)
        time.sleep(2)  # a loaded 2-core machine: gRPC clients start a few seconds apart
    harness.consume("shipments-popper", "shipments", pop=True, quiet=True)


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
