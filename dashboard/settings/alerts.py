"""Alerts and metrics: /metrics for Prometheus, alert notifications and Alertmanager, and email."""

from __future__ import annotations

import ipaddress

from django.core.exceptions import ImproperlyConfigured

from .environment import env
from .jobs import CELERY_BEAT_SCHEDULE

# /metrics (Prometheus): a token as for the API, or, without one, a scraper in one of these
# networks (comma-separated CIDRs; none by default). Per-queue series multiply the series count
# by the queues per group: off unless set.
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=[])
for _network in METRICS_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {_network!r} is not a network (10.0.0.0/8)") from None
METRICS_PER_QUEUE = env.bool("METRICS_PER_QUEUE", False)

# Alerts (consumers/alerts/): links in notifications start with this. No default: a guess (the
# development server's http://127.0.0.1:8000) sent every receiver to its own machine. Unset,
# notifications carry the page's path and say there is no link; `manage.py check` warns.
CONSOLE_BASE_URL = env.str("CONSOLE_BASE_URL", "")
# a failed notification is tried again after 5 s, 10 s, 20 s ... at most this far apart
ALERT_RETRY_BASE_SECONDS = env.int("ALERT_RETRY_BASE_SECONDS", 5)
ALERT_RETRY_MAX_SECONDS = env.int("ALERT_RETRY_MAX_SECONDS", 300)
ALERT_DELIVERY_GIVE_UP_SECONDS = env.int("ALERT_DELIVERY_GIVE_UP_SECONDS", 24 * 3600)
# Alertmanager drops an alert not posted again before its endsAt: posted this far ahead, every minute
ALERTMANAGER_HOLD_SECONDS = env.int("ALERTMANAGER_HOLD_SECONDS", 300)
CELERY_BEAT_SCHEDULE["alert-deliveries"] = {"task": "consumers.alerts.tasks.deliver_due", "schedule": 5.0}
CELERY_BEAT_SCHEDULE["alert-upkeep"] = {"task": "consumers.alerts.tasks.upkeep", "schedule": 60.0}

EMAIL_BACKEND = env.str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", "127.0.0.1")
EMAIL_PORT = env.int("EMAIL_PORT", 25)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", 20)  # a mail server that hangs fails the attempt, not the worker
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", "rocketmq-console@localhost")
