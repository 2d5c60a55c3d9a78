"""Settings, all from the environment (see .env.example for every variable).

DEBUG is off unless the environment turns it on, and with DEBUG off a missing SECRET_KEY is an
error, not a default: a production deployment that forgets a variable fails safe. Development
sets DEBUG=true (the demo and scripts/test.sh do it themselves) and needs nothing else: SQLite
under var/, Redis on 127.0.0.1:6379, no HTTPS redirect or HSTS.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
import plotly
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

PACKAGE_DIR = Path(__file__).resolve().parent
# Installed (pip install .), templates/ and static/ are this package's data, and the folders the
# console writes by default (var/, staticfiles/, Spark's scratch files) are in the working
# directory (the units' WorkingDirectory), never in site-packages. In a checkout, both are the
# checkout itself, as they always were.
INSTALLED = (PACKAGE_DIR / "templates").is_dir()
ASSETS_DIR = PACKAGE_DIR if INSTALLED else PACKAGE_DIR.parent
BASE_DIR = Path.cwd() if INSTALLED else PACKAGE_DIR.parent


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    return default if not value else [item.strip() for item in value.split(",") if item.strip()]


def env_secret(name: str) -> str | None:
    """A secret from NAME_FILE (a Docker or Kubernetes secret file) or else NAME."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path} cannot be read: {exc}") from None
    return env_str(name)


def env_duration(name: str, default: str) -> timedelta:
    """A duration such as 30m or 2h (minutes or hours)."""
    value = env_str(name, default)
    units = {"m": "minutes", "h": "hours"}
    try:
        amount = float(value[:-1])
        if value[-1:] not in units or amount <= 0:
            raise ValueError
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be minutes or hours such as 30m or 2h, not {value!r}") from None
    return timedelta(**{units[value[-1]]: amount})


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_secret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) is required when DEBUG is false")
    SECRET_KEY = "development-only-key-never-used-with-debug-off"
if SECRET_KEY.startswith("REPLACE-ME"):
    raise ImproperlyConfigured("SECRET_KEY is still the placeholder from .env.example: generate a random one")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",  # login throttling (see AXES_* below)
    "consumers",
]

MIDDLEWARE = [
    "consumers.middleware.ServerTimingMiddleware",
    "consumers.middleware.ContentSecurityPolicyMiddleware",
    # no-store on what signed-in users see; outside auth, so it reads the user the view settled on
    "consumers.middleware.NoStoreMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # static files from the web server itself (no separate file server needed)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # the language of a request: the language cookie, else the browser's Accept-Language, else
    # LANGUAGE_CODE (after the session, before CommonMiddleware; see consumers/languages/)
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # ...and for a signed-in user, the language saved on the user wins over both
    "consumers.languages.middleware.UserLanguageMiddleware",
    # every page needs a login unless its view is marked @login_not_required
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # single sign-on sessions: team membership read again from the provider (and refused writes audited)
    "consumers.identity.recheck.RecheckMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Redis down: 503 with the console's page or JSON under /api/, instead of a 500
    "consumers.middleware.RedisUnavailableMiddleware",
    # the database down: the same, for errors raised by views (errors.handle_500 answers for
    # those raised by the middleware above, the session's and the user's lookups among them)
    "consumers.middleware.DatabaseUnavailableMiddleware",
    # last: turns a login refused by django-axes into the lockout answer (AXES_LOCKOUT_CALLABLE)
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ASSETS_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "consumers.context_processors.roles",
                "django.template.context_processors.i18n",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if not env_str("DATABASE_URL"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the default SQLite file lives there
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out login before any password is checked. Passwords
# are checked as by ModelBackend unless PASSWORD_LOGIN is off; single sign-on sessions name the
# second one (consumers/identity/backends.py).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "consumers.identity.backends.PasswordBackend",
    "consumers.identity.backends.IdentityProviderBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "consumers:home"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on with OpenID Connect (consumers/identity/oidc.py): on when OIDC_ISSUER is set.
# The provider's endpoints and keys come from {OIDC_ISSUER}/.well-known/openid-configuration.
OIDC_ISSUER = (env_str("OIDC_ISSUER", "") or "").rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = env_secret("OIDC_CLIENT_SECRET") or ""
# the claim of the ID token that lists the user's groups (a nested claim as a.b: realm_access.roles)
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
OIDC_SCOPES = env_list("OIDC_SCOPES", ["openid", "profile", "email"])
# seconds the provider may take to answer (discovery, keys, the token exchange)
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10)
# how old a single sign-on session's team membership may get before it is read again from the
# provider (it is read again before every write whatever its age)
OIDC_RECHECK_SECONDS = env_int("OIDC_RECHECK_SECONDS", 300)
# Keycloak only: an API token's write asks Keycloak's admin API (the console client's service
# account, realm-management's view-users role) whether its owner is still enabled and in which
# groups, once the provider's last word on them is older than OIDC_RECHECK_SECONDS: a user
# disabled, deleted or removed from a group there loses token writes within that bound
OIDC_KEYCLOAK_ADMIN_API = env_bool("OIDC_KEYCLOAK_ADMIN_API", False)
# without OIDC_KEYCLOAK_ADMIN_API the console cannot ask: an API token of a single sign-on user
# writes only while the provider confirmed the owner's groups (a sign-in or a session's re-check)
# less than this many seconds ago, and not ended their sessions (back-channel logout) since
OIDC_TOKEN_MEMBERSHIP_MAX_AGE = env_int("OIDC_TOKEN_MEMBERSHIP_MAX_AGE", 86400)
if OIDC_ISSUER:
    # plain HTTP only to this machine (the development Keycloak): tokens and secrets cross it
    if not OIDC_ISSUER.startswith(("https://", "http://127.0.0.1:", "http://localhost:")):
        raise ImproperlyConfigured(f"OIDC_ISSUER must be the provider's https:// URL, not {OIDC_ISSUER!r}")
    if not OIDC_CLIENT_ID or not OIDC_CLIENT_SECRET:
        raise ImproperlyConfigured("OIDC_ISSUER is set: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (or _FILE) are needed")
    if "openid" not in OIDC_SCOPES:
        raise ImproperlyConfigured(f"OIDC_SCOPES must include openid, not {','.join(OIDC_SCOPES)!r}")
    if OIDC_KEYCLOAK_ADMIN_API and "/realms/" not in OIDC_ISSUER:
        raise ImproperlyConfigured(f"OIDC_KEYCLOAK_ADMIN_API needs a Keycloak issuer, not {OIDC_ISSUER!r}")
# Username and password logins (the login page, /admin/login/, API_BASIC_AUTH). Off: everyone
# signs in through the identity provider, the break-glass admin too (README, Single sign-on).
PASSWORD_LOGIN = env_bool("PASSWORD_LOGIN", True)
if not PASSWORD_LOGIN and not OIDC_ISSUER:
    raise ImproperlyConfigured("PASSWORD_LOGIN is off and OIDC_ISSUER is not set: nobody could log in")

# English and Simplified Chinese (locale/zh_Hans/, whose terms follow locale/zh_Hans/GLOSSARY.md).
# LANGUAGE_CODE is the site default: for visitors whose browser asks for neither, and for alert
# notifications to recipients whose language is unknown.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LANGUAGE_CODE = env_str("LANGUAGE_CODE", "en")
if LANGUAGE_CODE not in {code for code, _ in LANGUAGES}:
    raise ImproperlyConfigured(f"LANGUAGE_CODE must be one of en, zh-hans, not {LANGUAGE_CODE!r}")
LOCALE_PATHS = [ASSETS_DIR / "locale"]
# dates as ISO 8601 in English (Django's en: 11/23/2026); Chinese keeps Django's own formats
FORMAT_MODULE_PATH = ["consumers.languages.formats"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# Static files are served by whitenoise. STATIC_MANIFEST=true after `manage.py collectstatic`
# (production, the demo): hashed names (a new release never meets an old cached file), gzip,
# and a year's Cache-Control. Without it (development, tests) files come straight from the
# app folders, unhashed and short-cached, and nothing needs collecting.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", False)
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

SESSION_COOKIE_HTTPONLY = True
# secure cookies unless DEBUG; off only for plain HTTP on loopback (the demo)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
# a session lasts a working day at most, and ends with the browser
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = env_bool("SESSION_EXPIRE_AT_BROWSER_CLOSE", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = env_str("SECURE_REFERRER_POLICY", "same-origin")
X_FRAME_OPTIONS = "DENY"

# HTTPS: production redirects plain HTTP and sends HSTS (a year); development does neither.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Preloading is the domain owner's decision (hstspreload.org), not this application's: check
# --deploy does not nag about it. Every other deployment check stays on.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
# Behind a proxy that terminates TLS: "HTTP_X_FORWARDED_PROTO,https", i.e. a request is secure
# when that header says https. Only when the proxy always sets (or strips) the header itself.
_proxy_ssl_header = env_list("SECURE_PROXY_SSL_HEADER", [])
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured("SECURE_PROXY_SSL_HEADER must be HEADER,VALUE such as HTTP_X_FORWARDED_PROTO,https")
SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header) if _proxy_ssl_header else None

# Login throttling (django-axes): AXES_FAILURE_LIMIT failed logins for one username (from any
# address), or from one address (for any usernames), lock that username or address out for
# AXES_COOLOFF_TIME after the last failure. Every failed authenticate(request, ...) counts: the
# login page, /admin/login/ and any password the API checks. Unlock in the admin (Access
# attempts: delete) or with manage.py axes_reset_username NAME / axes_reset_ip ADDRESS.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(f"AXES_FAILURE_LIMIT must be at least 1, not {AXES_FAILURE_LIMIT}")
AXES_COOLOFF_TIME = env_duration("AXES_COOLOFF_TIME", "30m")
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own, not the pair
# A successful login clears that username's failures only (consumers/identity/lockout.py), not the
# failures from its address: axes's own AXES_RESET_ON_SUCCESS clears both, which would let
# someone with an account of their own reset an address lockout by logging in between guesses.
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "consumers.identity.lockout.lockout_response"
# The client address is REMOTE_ADDR. Behind a reverse proxy that is the proxy's own address, so
# all clients would share one address lockout: name a function of the request that returns the
# client's address instead (see .env.example; consumers.identity.lockout.client_ip_behind_one_proxy).
AXES_CLIENT_IP_CALLABLE = env_str("AXES_CLIENT_IP_CALLABLE")

# Redis: Celery broker and result backend, and the latest snapshots of every cluster.
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

# Python's cyclic garbage collector, every process (web, worker, beat). The default (700, 10, 10)
# runs a full collection every few requests of a 10,000-group list: each request's rows survive
# enough young collections to count as long-lived, and a full collection walks every object of
# the process (the decoded summaries too), a tenth of the requests taking 4x the median. Fewer,
# larger young collections keep those rows young: p95 200 -> 46 ms in process (docs/benchmarks.md).
GC_THRESHOLDS = tuple(int(n) for n in env_list("GC_THRESHOLDS", ["50000", "50", "50"]))
if len(GC_THRESHOLDS) != 3 or min(GC_THRESHOLDS) < 1:
    raise ImproperlyConfigured(f"GC_THRESHOLDS needs three positive integers, not {GC_THRESHOLDS}")

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 300)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 360)
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
CELERY_BROKER_RECONNECT_MAX_SECONDS = env_int("CELERY_BROKER_RECONNECT_MAX_SECONDS", 2)
# ...but a worker that has had no broker for this long (at start or after losing it) exits with
# status 69 (EX_UNAVAILABLE) instead of idling for ever: its supervisor (systemd Restart=always)
# starts it again and anyone looking sees the restarts. 0: never give up.
CELERY_BROKER_GIVE_UP_SECONDS = env_int("CELERY_BROKER_GIVE_UP_SECONDS", 900)
CELERY_WORKER_CONSUMER = "dashboard.celery:ReconnectingConsumer"
# When the connection is lost, tasks already running go on to their end (Celery's default, kept
# on purpose): every long task holds a claim (consumers/claims.py), so the copy Redis delivers
# again after the outage finds the job done or still beating and runs nothing twice, while
# cancelling them would cut a redrive or a statistics run off in the middle for nothing.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    # cheap: finds the clusters whose poll interval has passed and enqueues their polls
    "dispatch-polls": {"task": "consumers.live.tasks.dispatch_polls", "schedule": 0.5},
    "maintain-history": {"task": "consumers.live.tasks.maintain_history", "schedule": 600.0},
    "change-housekeeping": {"task": "consumers.changes.tasks.housekeeping", "schedule": 30.0},
}

# RocketMQ
# The cluster the demo (and a fresh install) starts with; more are added in the admin.
ROCKETMQ_DEFAULT_CLUSTER_NAME = env_str("ROCKETMQ_CLUSTER_NAME", "local")
ROCKETMQ_POLL_INTERVAL = env_int("ROCKETMQ_POLL_INTERVAL", 15)
# where the clients write message traces (enableMsgTrace; a customized trace topic where they
# name one): a message's track shows its trace from there. Empty: no trace is read
ROCKETMQ_TRACE_TOPIC = env_str("ROCKETMQ_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC")
ROCKETMQ_REQUEST_TIMEOUT = float(env_str("ROCKETMQ_REQUEST_TIMEOUT", "5"))
ROCKETMQ_CONNECT_TIMEOUT = float(env_str("ROCKETMQ_CONNECT_TIMEOUT", "3"))
# A poll of one cluster never takes longer than this; what it could not read is marked.
ROCKETMQ_POLL_DEADLINE = env_int("ROCKETMQ_POLL_DEADLINE", 12)
# ...or than this per thousand groups its last poll saw, when that is longer: the deadline grows
# with the cluster (a poll of 10,000 groups takes 4.2 s on 2 cores, bench_poll; 1 s a thousand
# leaves more than twice that), and so do its task's time limits and its staleness bound
ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = float(env_str("ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS", "1"))
# Each broker's first reads in a poll must answer within this, or the broker is "failing"
# for that poll and left out, so one hung broker does not blind the others.
ROCKETMQ_BROKER_DEADLINE = float(env_str("ROCKETMQ_BROKER_DEADLINE", "3"))
# At most this many groups asked of the proxies per poll (a proxy answers ~330 connection lists
# a second): those that had gRPC clients last poll always, the others in rotation
ROCKETMQ_PROXY_GROUPS_PER_POLL = env_int("ROCKETMQ_PROXY_GROUPS_PER_POLL", 300)
# After a proxy restarts, its gRPC clients are unknown (not STOPPED) this long: the SDK clients
# register again at their next heartbeat, 20 to 85 s later as measured (consumers/live/proxy_grace.py)
ROCKETMQ_PROXY_RESTART_GRACE = env_int("ROCKETMQ_PROXY_RESTART_GRACE", 90)
# A value older than poll interval + poll deadline + this margin is stale.
STALE_MARGIN_SECONDS = env_int("STALE_MARGIN_SECONDS", 5)
# A broker the name server stopped listing is shown as missing until removed, or this long.
BROKER_FORGET_AFTER_SECONDS = env_int("BROKER_FORGET_AFTER_SECONDS", 24 * 3600)
# requests in flight at once during a poll (pipelined over one connection per broker)
ROCKETMQ_POLL_CONCURRENCY = env_int("ROCKETMQ_POLL_CONCURRENCY", 512)
# Lag-in-seconds lookups (one message read each) a poll may make beyond its cache.
ROCKETMQ_LAGTIME_BUDGET = env_int("ROCKETMQ_LAGTIME_BUDGET", 256)

# Health thresholds; per-group overrides live in HealthOverride.
HEALTH_WINDOW_SECONDS = env_int("HEALTH_WINDOW_SECONDS", 300)
HEALTH_STALL_SECONDS = env_int("HEALTH_STALL_SECONDS", 60)
HEALTH_MIN_SAMPLES = env_int("HEALTH_MIN_SAMPLES", 3)
HEALTH_MIN_LAG = env_int("HEALTH_MIN_LAG", 1)
HEALTH_RETRY_RATE_PER_MINUTE = float(env_str("HEALTH_RETRY_RATE_PER_MINUTE", "60"))
# more polls than this in the window with a changed queue allocation: REBALANCE_STORM
HEALTH_REBALANCE_CHANGES = env_int("HEALTH_REBALANCE_CHANGES", 5)

# History of polled snapshots (Parquet), read by the nightly statistics and the lag charts:
# a folder, a file:// URL, a mount every worker host shares, or s3:// / hdfs:// (through
# pyarrow's file systems; the statistics job reads the same place, see
# consumers/live/history_files.py). With workers on several hosts it must be one they share.
# HISTORY_DIR is its older name, read when HISTORY_URL is unset.
HISTORY_URL = env_str("HISTORY_URL", env_str("HISTORY_DIR", str(VAR_DIR / "history")))
HISTORY_RETENTION_DAYS = env_int("HISTORY_RETENTION_DAYS", 30)
# Where a poll's history rows wait when the history store cannot be written (this host's disk,
# apart from HISTORY_URL), and how many polls per cluster it keeps (240: an hour at 15 s) before
# the oldest are dropped and counted (consumers/live/spool.py)
HISTORY_SPOOL_DIR = Path(env_str("HISTORY_SPOOL_DIR", str(VAR_DIR / "history-spool")))
HISTORY_SPOOL_MAX_POLLS = env_int("HISTORY_SPOOL_MAX_POLLS", 240)

# Change requests (offset resets, DLQ redrives): four eyes, expiry, execution.
CHANGE_REQUEST_EXPIRY_SECONDS = env_int("CHANGE_REQUEST_EXPIRY_SECONDS", 4 * 3600)
# An approver must approve a preview no older than this (or refresh it first).
CHANGE_PREVIEW_MAX_AGE_SECONDS = env_int("CHANGE_PREVIEW_MAX_AGE_SECONDS", 600)
# ... and the effect it approves (messages re-consumed or skipped, over the whole request) is
# read again at approval and when the run starts: it may differ from the preview's by this
# percentage or this many messages, whichever is larger (consumers/resets/effect.py)
CHANGE_EFFECT_TOLERANCE_PERCENT = env_int("CHANGE_EFFECT_TOLERANCE_PERCENT", 10)
CHANGE_EFFECT_TOLERANCE_MESSAGES = env_int("CHANGE_EFFECT_TOLERANCE_MESSAGES", 100)
# Development only: lets the requester approve their own request (a warning banner shows it).
CHANGES_SINGLE_PERSON_MODE = env_bool("CHANGES_SINGLE_PERSON_MODE", False)
# an operator may pause a group's consumption alone (no second approver), audited as an
# emergency; resuming and every other config change still take four eyes
CHANGES_EMERGENCY_PAUSE = env_bool("CHANGES_EMERGENCY_PAUSE", False)
# A running change whose worker has not reported for this long is taken over by another.
CHANGE_RUN_STALE_SECONDS = env_int("CHANGE_RUN_STALE_SECONDS", 120)
CHANGE_RUN_TIME_LIMIT = env_int("CHANGE_RUN_TIME_LIMIT", 600)
RESET_PREVIEW_DEADLINE = env_int("RESET_PREVIEW_DEADLINE", 20)
# After a reset, how long to wait for the broker to show every target (a few poll periods).
RESET_VERIFY_SECONDS = env_int("RESET_VERIFY_SECONDS", 30)

# DLQ redrive: jobs above this many messages need an approver; the highest rate allowed.
REDRIVE_APPROVAL_THRESHOLD = env_int("REDRIVE_APPROVAL_THRESHOLD", 1000)
REDRIVE_DEFAULT_RATE = env_int("REDRIVE_DEFAULT_RATE", 100)
REDRIVE_MAX_RATE = env_int("REDRIVE_MAX_RATE", 20000)
REDRIVE_TIME_LIMIT = env_int("REDRIVE_TIME_LIMIT", 6 * 3600)

# Nightly statistics (consumers/stats/): a spark-submit child process, never in the worker.
# The output may be a URL (file://, hdfs://, s3a://) when the job runs on a real Spark cluster;
# it reads the history at HISTORY_URL.
STATS_SPARK_MASTER = env_str("STATS_SPARK_MASTER", "local[*]")
STATS_SPARK_SUBMIT = env_str("STATS_SPARK_SUBMIT", str(Path(sys.executable).parent / "spark-submit"))
# extra --conf pairs, comma separated; the defaults keep the driver on the loopback interface
STATS_SPARK_CONF = env_list(
    "STATS_SPARK_CONF",
    ["spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.ui.enabled=false"],
)
# the driver's heap (local[*]: the executors run in it too); the JVM's resident peak is about
# 0.25 GiB above it: 2.80 GiB for the 92 M-row day of bench_stats at 2560m
STATS_DRIVER_MEMORY = env_str("STATS_DRIVER_MEMORY", "2560m")
STATS_OUTPUT_URL = env_str("STATS_OUTPUT_URL", str(VAR_DIR / "stats"))
STATS_RUN_DIR = Path(env_str("STATS_RUN_DIR", str(VAR_DIR / "stats-runs")))  # logs, params, summaries
STATS_RUN_TIME_LIMIT = env_int("STATS_RUN_TIME_LIMIT", 3600)
STATS_NIGHTLY_AT = env_str("STATS_NIGHTLY_AT", "00:30")  # UTC, for the previous day
STATS_LAG_SLO_SECONDS = float(env_str("STATS_LAG_SLO_SECONDS", "60"))  # per group: the health override
try:
    _nightly_hour, _nightly_minute = (int(part) for part in STATS_NIGHTLY_AT.split(":"))
except ValueError:
    raise ImproperlyConfigured(f"STATS_NIGHTLY_AT={STATS_NIGHTLY_AT!r}: expected HH:MM (UTC)") from None
CELERY_BEAT_SCHEDULE["nightly-statistics"] = {
    "task": "consumers.stats.tasks.nightly_statistics",
    "schedule": crontab(hour=_nightly_hour, minute=_nightly_minute),
}

# Lag reports (consumers/reports/)
STATS_RETENTION_DAYS = env_int("STATS_RETENTION_DAYS", 400)  # reports refuse older ranges
REPORT_DIR = Path(env_str("REPORT_DIR", str(VAR_DIR / "reports")))
REPORT_RETENTION_DAYS = env_int("REPORT_RETENTION_DAYS", 30)
# A report is built in one worker process, whole in memory: its range is at most REPORT_MAX_DAYS
# (a quarter) and its rows (groups x days, or x hours) at most REPORT_MAX_ROWS, estimated and
# refused before anything is built. 92,000 rows took 30 s and 120 MB here (1,000 groups over
# a quarter); 200,000 stay well inside REPORT_BUILD_TIME_LIMIT, two builds at once beside the polls.
REPORT_MAX_DAYS = env_int("REPORT_MAX_DAYS", 92)
REPORT_MAX_ROWS = env_int("REPORT_MAX_ROWS", 200_000)
REPORT_CHROMIUM = env_str("REPORT_CHROMIUM", "/usr/bin/chromium")  # prints the PDFs
REPORT_PDF_TIMEOUT = env_int("REPORT_PDF_TIMEOUT", 300)
REPORT_PDF_GROUP_TABLES = env_int("REPORT_PDF_GROUP_TABLES", 25)  # per-group tables in a PDF (worst first)
REPORT_EMAIL_TO = env_list("REPORT_EMAIL_TO", [])  # weekly reports are mailed here when set
REPORT_WEEKLY_AT = env_str("REPORT_WEEKLY_AT", "mon 02:00")  # UTC, for the seven days before
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
REPORT_BUILD_TIME_LIMIT = env_int("REPORT_BUILD_TIME_LIMIT", 900)
TASK_HARD_LIMITS = {
    "global": CELERY_TASK_TIME_LIMIT,
    "change": CHANGE_RUN_TIME_LIMIT + 30,
    "redrive": REDRIVE_TIME_LIMIT + 30,
    "statistics": STATS_RUN_TIME_LIMIT + 120,
    "report": REPORT_BUILD_TIME_LIMIT + 60,
}
_longest = max(TASK_HARD_LIMITS.values())
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", _longest + 600)
if CELERY_VISIBILITY_TIMEOUT <= _longest:
    _name = max(TASK_HARD_LIMITS, key=TASK_HARD_LIMITS.get)
    raise ImproperlyConfigured(
        f"CELERY_VISIBILITY_TIMEOUT={CELERY_VISIBILITY_TIMEOUT} s must exceed the longest task limit "
        f"({_longest} s, the {_name} task's): a running task would be delivered again"
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}

# The API authenticates scripts by per-user tokens (Authorization: Bearer). HTTP Basic with a
# password is for old scripts only: off unless set, and never asked for by the API.
API_BASIC_AUTH = env_bool("API_BASIC_AUTH", False)

# /metrics (Prometheus): a token as for the API, or, without one, a scraper in one of these
# networks (comma-separated CIDRs; none by default). Per-queue series multiply the series count
# by the queues per group: off unless set.
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", [])
for _network in METRICS_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {_network!r} is not a network (10.0.0.0/8)") from None
METRICS_PER_QUEUE = env_bool("METRICS_PER_QUEUE", False)

# Alerts (consumers/alerts/): links in notifications start with this. No default: a guess (the
# development server's http://127.0.0.1:8000) sent every receiver to its own machine. Unset,
# notifications carry the page's path and say there is no link; `manage.py check` warns.
CONSOLE_BASE_URL = env_str("CONSOLE_BASE_URL", "")
# a failed notification is tried again after 5 s, 10 s, 20 s ... at most this far apart
ALERT_RETRY_BASE_SECONDS = env_int("ALERT_RETRY_BASE_SECONDS", 5)
ALERT_RETRY_MAX_SECONDS = env_int("ALERT_RETRY_MAX_SECONDS", 300)
ALERT_DELIVERY_GIVE_UP_SECONDS = env_int("ALERT_DELIVERY_GIVE_UP_SECONDS", 24 * 3600)
# Alertmanager drops an alert not posted again before its endsAt: posted this far ahead, every minute
ALERTMANAGER_HOLD_SECONDS = env_int("ALERTMANAGER_HOLD_SECONDS", 300)
CELERY_BEAT_SCHEDULE["alert-deliveries"] = {"task": "consumers.alerts.tasks.deliver_due", "schedule": 5.0}
CELERY_BEAT_SCHEDULE["alert-upkeep"] = {"task": "consumers.alerts.tasks.upkeep", "schedule": 60.0}

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "127.0.0.1")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20)  # a mail server that hangs fails the attempt, not the worker
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "rocketmq-console@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
