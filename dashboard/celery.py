"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import functools
import os

from celery import Celery
from celery.worker.consumer import Consumer

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

# Each feature package of the console keeps its own tasks module.
FEATURE_PACKAGES = ["consumers.live", "consumers.changes", "consumers.dlq", "consumers.stats", "consumers.reports"]

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(FEATURE_PACKAGES)


class ReconnectingConsumer(Consumer):
    """The worker's consumer, trying to reconnect to a lost broker at least every
    CELERY_BROKER_RECONNECT_MAX_SECONDS (kombu ramps 2, 4, 6 ... up to a fixed 30 s): a worker is back
    within seconds of Redis, not half a minute later."""

    def ensure_connected(self, conn):
        from django.conf import settings

        most = settings.CELERY_BROKER_RECONNECT_MAX_SECONDS
        conn.ensure_connection = functools.partial(
            conn.ensure_connection, interval_start=min(1, most), interval_step=1, interval_max=most
        )
        return super().ensure_connected(conn)
