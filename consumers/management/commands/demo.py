from django.conf import settings
from django.core.management.base import BaseCommand

from consumers.devstack.demo import Demo, state_file, stop_running_demo


class Command(BaseCommand):
    help = "Run the demo: local RocketMQ with traffic, Redis, Celery worker and beat, and Django. Ctrl-C stops it."

    def add_arguments(self, parser):
        parser.add_argument("--stop", action="store_true", help="stop a demo running in another terminal")
        parser.add_argument("--http-port", type=int, default=8000)
        parser.add_argument("--namesrv-port", type=int, default=9876, help="used if free, else a free port")
        parser.add_argument("--broker-port", type=int, default=10911, help="used if free, else a free port")

    def handle(self, *args, stop, http_port, namesrv_port, broker_port, **options):
        if stop:
            stopped = stop_running_demo()
            self.stdout.write("Demo stopped." if stopped else "No demo is running.")
            return
        demo = Demo(http_port=http_port, namesrv_port=namesrv_port, broker_port=broker_port, log=self.stdout.write)
        try:
            users = demo.start()
            self._announce(demo, users)
            demo.run_until_stopped()
        finally:
            demo.stop()

    def _announce(self, demo, users: dict[str, str]) -> None:
        lines = [
            "",
            "Demo ready.",
            f"  Console      http://127.0.0.1:{demo.http_port}/   (log in as one of these users)",
        ]
        lines += [f"    {role:<9} password {password}" for role, password in users.items()]
        lines += [
            f"  RocketMQ     name server {demo.rocketmq.namesrv_addr}, brokers "
            + ", ".join(f"{n} {b.address}" for n, b in demo.rocketmq.brokers.items()),
            f"  Redis        {settings.REDIS_URL}{' (started by the demo)' if demo.redis else ''}",
            "  Celery       worker (4 threads) and beat: a poll every "
            f"{settings.ROCKETMQ_POLL_INTERVAL} s; logs in {demo.base}",
            f"  State        {state_file()}",
            "Stop with Ctrl-C, or `python manage.py demo --stop` from another terminal.",
            "",
        ]
        self.stdout.write("\n".join(lines))
