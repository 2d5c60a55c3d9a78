"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import functools
import logging
import os

from celery import Celery
from celery.exceptions import WorkerShutdown
from celery.worker.consumer import Consumer
from kombu.exceptions import OperationalError

from dashboard import broker_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
# redis:// and rediss:// brokers: kombu's Redis transport with the fix of a worker that crashed
# when Redis went away while a task ran (dashboard/broker_transport.py), before any connection
broker_transport.register()

# Each feature package of the console keeps its own tasks module.
FEATURE_PACKAGES = ["consumers.live", "consumers.changes", "consumers.dlq", "consumers.stats", "consumers.reports"]

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(FEATURE_PACKAGES)


logger = logging.getLogger(__name__)

# sysexits.h: a service the program needs is unavailable (systemd shows it; Restart= acts on it)
EX_UNAVAILABLE = 69


class ReconnectingConsumer(Consumer):
    """The worker's consumer, trying to reconnect to a lost broker at least every
    CELERY_BROKER_RECONNECT_MAX_SECONDS (kombu ramps 2, 4, 6 ... up to a fixed 30 s): a worker is back
    within seconds of Redis, not half a minute later. After CELERY_BROKER_GIVE_UP_SECONDS without
    a broker the worker exits non-zero, so that supervision restarts it rather than a process
    that looks alive and does nothing."""

    def ensure_connected(self, conn):
        from django.conf import settings

        most = settings.CELERY_BROKER_RECONNECT_MAX_SECONDS
        give_up = settings.CELERY_BROKER_GIVE_UP_SECONDS or None
        conn.ensure_connection = functools.partial(
            conn.ensure_connection, interval_start=min(1, most), interval_step=1, interval_max=most, timeout=give_up
        )
        try:
            return super().ensure_connected(conn)
        except (OperationalError, *conn.connection_errors) as exc:  # kombu re-raises as its own
            if give_up is None:
                raise
            logger.critical("no broker at %s for %s s, giving up (exit %s): %s", conn.as_uri(), give_up,
                            EX_UNAVAILABLE, exc)  # fmt: skip
            raise WorkerShutdown(EX_UNAVAILABLE) from exc
