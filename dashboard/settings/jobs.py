"""Jobs: Celery on Redis, the beat schedule, and the long jobs with their limits: change requests,
DLQ redrives, the nightly statistics and the lag reports."""

from __future__ import annotations

import sys
from pathlib import Path

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from .core import VAR_DIR
from .environment import env
from .storage import REDIS_URL

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", 300)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", 360)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_SEND_TASK_EVENTS = True
CELERY_TASK_SEND_SENT_EVENT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis down, for any length of time: the worker keeps trying (Celery's default gives up after
# 100 tries, then the worker stops consuming), every CELERY_BROKER_RECONNECT_MAX_SECONDS at most
# once the tries have ramped up (Celery's fixed 30 s would leave the data stale for up to 30 s
# after Redis is back; dashboard/celery.py applies it).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_RECONNECT_MAX_SECONDS = env.int("CELERY_BROKER_RECONNECT_MAX_SECONDS", 2)
# ...but a worker that has had no broker for this long (at start or after losing it) exits with
# status 69 (EX_UNAVAILABLE) instead of idling for ever: its supervisor (systemd Restart=always)
# starts it again and anyone looking sees the restarts. 0: never give up.
CELERY_BROKER_GIVE_UP_SECONDS = env.int("CELERY_BROKER_GIVE_UP_SECONDS", 900)
CELERY_WORKER_CONSUMER = "dashboard.celery:ReconnectingConsumer"
# When the connection is lost, tasks already running go on to their end (Celery's default, kept
# on purpose): every long task holds a claim (consumers/jobs/claims.py), so the copy Redis delivers
# again after the outage finds the job done or still beating and runs nothing twice, while
# cancelling them would cut a redrive or a statistics run off in the middle for nothing.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Beat may run on several hosts: one sends, the others stand by (dashboard/beat.py). The schedule
# (each entry's last run) and the lock naming the active beat are in Redis; a standby takes over
# within BEAT_LOCK_SECONDS + CELERY_BEAT_MAX_LOOP_INTERVAL of the active beat's last tick.
CELERY_BEAT_SCHEDULER = "dashboard.beat:OneActiveScheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = 5
BEAT_LOCK_SECONDS = env.int("BEAT_LOCK_SECONDS", 20)
if BEAT_LOCK_SECONDS < 2 * CELERY_BEAT_MAX_LOOP_INTERVAL:
    raise ImproperlyConfigured(f"BEAT_LOCK_SECONDS={BEAT_LOCK_SECONDS}: at least {2 * CELERY_BEAT_MAX_LOOP_INTERVAL} "
                               "(the active beat renews the lock at least every 5 s)")  # fmt: skip
CELERY_BEAT_SCHEDULE = {
    # cheap: finds the clusters whose poll interval has passed and enqueues their polls
    "dispatch-polls": {"task": "consumers.live.tasks.dispatch_polls", "schedule": 0.5},
    "maintain-history": {"task": "consumers.live.tasks.maintain_history", "schedule": 600.0},
    "change-housekeeping": {"task": "consumers.changes.tasks.housekeeping", "schedule": 30.0},
}

# Change requests (offset resets, DLQ redrives): four eyes, expiry, execution.
CHANGE_REQUEST_EXPIRY_SECONDS = env.int("CHANGE_REQUEST_EXPIRY_SECONDS", 4 * 3600)
# An approver must approve a preview no older than this (or refresh it first).
CHANGE_PREVIEW_MAX_AGE_SECONDS = env.int("CHANGE_PREVIEW_MAX_AGE_SECONDS", 600)
# ... and the effect it approves (messages re-consumed or skipped, over the whole request) is
# read again at approval and when the run starts: it may differ from the preview's by this
# percentage or this many messages, whichever is larger (consumers/resets/effect.py)
CHANGE_EFFECT_TOLERANCE_PERCENT = env.int("CHANGE_EFFECT_TOLERANCE_PERCENT", 10)
CHANGE_EFFECT_TOLERANCE_MESSAGES = env.int("CHANGE_EFFECT_TOLERANCE_MESSAGES", 100)
# Development only: lets the requester approve their own request (a warning banner shows it).
CHANGES_SINGLE_PERSON_MODE = env.bool("CHANGES_SINGLE_PERSON_MODE", False)
# an operator may pause a group's consumption alone (no second approver), audited as an
# emergency; resuming and every other config change still take four eyes
CHANGES_EMERGENCY_PAUSE = env.bool("CHANGES_EMERGENCY_PAUSE", False)
# A running change whose worker has not reported for this long is taken over by another.
CHANGE_RUN_STALE_SECONDS = env.int("CHANGE_RUN_STALE_SECONDS", 120)
CHANGE_RUN_TIME_LIMIT = env.int("CHANGE_RUN_TIME_LIMIT", 600)
RESET_PREVIEW_DEADLINE = env.int("RESET_PREVIEW_DEADLINE", 20)
# After a reset, how long to wait for the broker to show every target (a few poll periods).
RESET_VERIFY_SECONDS = env.int("RESET_VERIFY_SECONDS", 30)

# DLQ redrive: jobs above this many messages need an approver; the highest rate allowed.
REDRIVE_APPROVAL_THRESHOLD = env.int("REDRIVE_APPROVAL_THRESHOLD", 1000)
REDRIVE_DEFAULT_RATE = env.int("REDRIVE_DEFAULT_RATE", 100)
REDRIVE_MAX_RATE = env.int("REDRIVE_MAX_RATE", 20000)
REDRIVE_TIME_LIMIT = env.int("REDRIVE_TIME_LIMIT", 6 * 3600)

# Nightly statistics (consumers/stats/): a spark-submit child process, never in the worker.
# The output may be a URL (file://, hdfs://, s3a://) when the job runs on a real Spark cluster;
# it reads the history at HISTORY_URL.
STATS_SPARK_MASTER = env.str("STATS_SPARK_MASTER", "local[*]")
STATS_SPARK_SUBMIT = env.str("STATS_SPARK_SUBMIT", str(Path(sys.executable).parent / "spark-submit"))
# extra --conf pairs, comma separated; the defaults keep the driver on the loopback interface
STATS_SPARK_CONF = env.list(
    "STATS_SPARK_CONF",
    default=["spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.ui.enabled=false"],
)
# the driver's heap (local[*]: the executors run in it too); the JVM's resident peak is about
# 0.25 GiB above it: 2.80 GiB for the 92 M-row day of bench_stats at 2560m
STATS_DRIVER_MEMORY = env.str("STATS_DRIVER_MEMORY", "2560m")
STATS_OUTPUT_URL = env.str("STATS_OUTPUT_URL", str(VAR_DIR / "stats"))
STATS_RUN_DIR = Path(env.str("STATS_RUN_DIR", str(VAR_DIR / "stats-runs")))  # logs, params, summaries
STATS_RUN_TIME_LIMIT = env.int("STATS_RUN_TIME_LIMIT", 3600)
STATS_NIGHTLY_AT = env.str("STATS_NIGHTLY_AT", "00:30")  # UTC, for the previous day
STATS_LAG_SLO_SECONDS = env.float("STATS_LAG_SLO_SECONDS", 60)  # per group: the health override
try:
    _nightly_hour, _nightly_minute = (int(part) for part in STATS_NIGHTLY_AT.split(":"))
except ValueError:
    raise ImproperlyConfigured(f"STATS_NIGHTLY_AT={STATS_NIGHTLY_AT!r}: expected HH:MM (UTC)") from None
CELERY_BEAT_SCHEDULE["nightly-statistics"] = {
    "task": "consumers.stats.tasks.nightly_statistics",
    "schedule": crontab(hour=_nightly_hour, minute=_nightly_minute),
}

# Lag reports (consumers/reports/)
STATS_RETENTION_DAYS = env.int("STATS_RETENTION_DAYS", 400)  # reports refuse older ranges
REPORT_DIR = Path(env.str("REPORT_DIR", str(VAR_DIR / "reports")))
REPORT_RETENTION_DAYS = env.int("REPORT_RETENTION_DAYS", 30)
# A report is built in one worker process, whole in memory: its range is at most REPORT_MAX_DAYS
# (a quarter) and its rows (groups x days, or x hours) at most REPORT_MAX_ROWS, estimated and
# refused before anything is built. 92,000 rows took 30 s and 120 MB here (1,000 groups over
# a quarter); 200,000 stay well inside REPORT_BUILD_TIME_LIMIT, two builds at once beside the polls.
REPORT_MAX_DAYS = env.int("REPORT_MAX_DAYS", 92)
REPORT_MAX_ROWS = env.int("REPORT_MAX_ROWS", 200_000)
REPORT_CHROMIUM = env.str("REPORT_CHROMIUM", "/usr/bin/chromium")  # prints the PDFs
REPORT_PDF_TIMEOUT = env.int("REPORT_PDF_TIMEOUT", 300)
REPORT_PDF_GROUP_TABLES = env.int("REPORT_PDF_GROUP_TABLES", 25)  # per-group tables in a PDF (worst first)
REPORT_EMAIL_TO = env.list("REPORT_EMAIL_TO", default=[])  # weekly reports are mailed here when set
REPORT_WEEKLY_AT = env.str("REPORT_WEEKLY_AT", "mon 02:00")  # UTC, for the seven days before
try:
    _weekly_day, _weekly_time = REPORT_WEEKLY_AT.split()
    _weekly_hour, _weekly_minute = (int(part) for part in _weekly_time.split(":"))
except ValueError:
    raise ImproperlyConfigured(f"REPORT_WEEKLY_AT={REPORT_WEEKLY_AT!r}: expected 'mon 02:00' (UTC)") from None
CELERY_BEAT_SCHEDULE["weekly-reports"] = {
    "task": "consumers.reports.tasks.weekly_reports",
    "schedule": crontab(day_of_week=_weekly_day, hour=_weekly_hour, minute=_weekly_minute),
}
CELERY_BEAT_SCHEDULE["expire-reports"] = {"task": "consumers.reports.tasks.expire_reports", "schedule": 3600.0}


# Each long job runs in a task of its own whose limits come from the job's setting (above); the
# global CELERY_TASK_*_TIME_LIMIT applies to the short tasks only. Redis re-delivers a late-
# acknowledged task that is not acknowledged within the visibility timeout, while it still runs:
# the timeout must exceed the longest hard limit, or that job would run twice at once.
REPORT_BUILD_TIME_LIMIT = env.int("REPORT_BUILD_TIME_LIMIT", 900)
TASK_HARD_LIMITS = {
    "global": CELERY_TASK_TIME_LIMIT,
    "change": CHANGE_RUN_TIME_LIMIT + 30,
    "redrive": REDRIVE_TIME_LIMIT + 30,
    "statistics": STATS_RUN_TIME_LIMIT + 120,
    "report": REPORT_BUILD_TIME_LIMIT + 60,
}
_longest = max(TASK_HARD_LIMITS.values())
CELERY_VISIBILITY_TIMEOUT = env.int("CELERY_VISIBILITY_TIMEOUT", _longest + 600)
if CELERY_VISIBILITY_TIMEOUT <= _longest:
    _name = max(TASK_HARD_LIMITS, key=TASK_HARD_LIMITS.get)
    raise ImproperlyConfigured(
        f"CELERY_VISIBILITY_TIMEOUT={CELERY_VISIBILITY_TIMEOUT} s must exceed the longest task limit "
        f"({_longest} s, the {_name} task's): a running task would be delivered again"
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
