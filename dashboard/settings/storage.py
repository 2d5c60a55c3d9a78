"""Storage: the database, static files, Redis, and the history of polled snapshots."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
import plotly

from .core import ASSETS_DIR, BASE_DIR, VAR_DIR
from .environment import env

DATABASES = {
    "default": dj_database_url.parse(
        env.str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env.int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if not env.str("DATABASE_URL", None):
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the default SQLite file lives there
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# Static files are served by whitenoise. STATIC_MANIFEST=true after `manage.py collectstatic`
# (production, the demo): hashed names (a new release never meets an old cached file), gzip,
# and a year's Cache-Control. Without it (development, tests) files come straight from the
# app folders, unhashed and short-cached, and nothing needs collecting.
STATIC_MANIFEST = env.bool("STATIC_MANIFEST", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST
STATICFILES_DIRS = [
    ASSETS_DIR / "static",
    # plotly.js comes from the pinned plotly package itself: one version, no CDN, no copy
    ("vendor/plotly", Path(plotly.__file__).parent / "package_data"),
]

# Redis: Celery broker and result backend, and the latest snapshots of every cluster.
REDIS_URL = env.str("REDIS_URL", "redis://127.0.0.1:6379/0")

# History of polled snapshots (Parquet), read by the nightly statistics and the lag charts:
# a folder, a file:// URL, a mount every worker host shares, or s3:// / hdfs:// (through
# pyarrow's file systems; the statistics job reads the same place, see
# consumers/live/history_files.py). With workers on several hosts it must be one they share.
# HISTORY_DIR is its older name, read when HISTORY_URL is unset.
HISTORY_URL = env.str("HISTORY_URL", env.str("HISTORY_DIR", str(VAR_DIR / "history")))
HISTORY_RETENTION_DAYS = env.int("HISTORY_RETENTION_DAYS", 30)
# Where a poll's history rows wait when the history store cannot be written (this host's disk,
# apart from HISTORY_URL), and how many polls per cluster it keeps (240: an hour at 15 s) before
# the oldest are dropped and counted (consumers/live/spool.py)
HISTORY_SPOOL_DIR = Path(env.str("HISTORY_SPOOL_DIR", str(VAR_DIR / "history-spool")))
HISTORY_SPOOL_MAX_POLLS = env.int("HISTORY_SPOOL_MAX_POLLS", 240)
