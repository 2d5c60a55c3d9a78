"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

# Each feature package of the console keeps its own tasks module.
FEATURE_PACKAGES = ["consumers.live", "consumers.changes", "consumers.dlq", "consumers.stats", "consumers.reports"]

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(FEATURE_PACKAGES)
