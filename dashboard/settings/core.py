"""Core: where the console's files are, DEBUG and the secret key, the hosts, Django's apps,
middleware and templates, languages, HTTPS, cookies and sessions, the garbage collector and logging.

DEBUG is off unless the environment turns it on, and with DEBUG off a missing SECRET_KEY is an
error, not a default: a production deployment that forgets a variable fails safe. Development
sets DEBUG=true (the demo and scripts/test.sh do it themselves) and needs nothing else: SQLite
under var/, Redis on 127.0.0.1:6379, no HTTPS redirect or HSTS.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .environment import env

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # dashboard/, this package's parent
# Installed (pip install .), templates/ and static/ are this package's data, and the folders the
# console writes by default (var/, staticfiles/, Spark's scratch files) are in the working
# directory (the units' WorkingDirectory), never in site-packages. In a checkout, both are the
# checkout itself, as they always were.
INSTALLED = (PACKAGE_DIR / "templates").is_dir()
ASSETS_DIR = PACKAGE_DIR if INSTALLED else PACKAGE_DIR.parent
BASE_DIR = Path.cwd() if INSTALLED else PACKAGE_DIR.parent

DEBUG = env.bool("DEBUG", False)

SECRET_KEY = env.secret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) is required when DEBUG is false")
    SECRET_KEY = "development-only-key-never-used-with-debug-off"
if SECRET_KEY.startswith("REPLACE-ME"):
    raise ImproperlyConfigured("SECRET_KEY is still the placeholder from .env.example: generate a random one")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

VAR_DIR = Path(env.str("VAR_DIR", str(BASE_DIR / "var")))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",  # login throttling (see AXES_* in identity.py)
    "consumers",
]

MIDDLEWARE = [
    # /healthz and /readyz for orchestrators: by any Host, over plain HTTP (consumers/live/probes.py)
    "consumers.live.probes.ProbeMiddleware",
    "consumers.web.middleware.ServerTimingMiddleware",
    "consumers.web.middleware.ContentSecurityPolicyMiddleware",
    # no-store on what signed-in users see; outside auth, so it reads the user the view settled on
    "consumers.web.middleware.NoStoreMiddleware",
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
    "consumers.web.middleware.RedisUnavailableMiddleware",
    # the database down: the same, for errors raised by views (errors.handle_500 answers for
    # those raised by the middleware above, the session's and the user's lookups among them)
    "consumers.web.middleware.DatabaseUnavailableMiddleware",
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

# English and Simplified Chinese (locale/zh_Hans/, whose terms follow locale/zh_Hans/GLOSSARY.md).
# LANGUAGE_CODE is the site default: for visitors whose browser asks for neither, and for alert
# notifications to recipients whose language is unknown.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LANGUAGE_CODE = env.str("LANGUAGE_CODE", "en")
if LANGUAGE_CODE not in {code for code, _ in LANGUAGES}:
    raise ImproperlyConfigured(f"LANGUAGE_CODE must be one of en, zh-hans, not {LANGUAGE_CODE!r}")
LOCALE_PATHS = [ASSETS_DIR / "locale"]
# dates as ISO 8601 in English (Django's en: 11/23/2026); Chinese keeps Django's own formats
FORMAT_MODULE_PATH = ["consumers.languages.formats"]
TIME_ZONE = env.str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

SESSION_COOKIE_HTTPONLY = True
# secure cookies unless DEBUG; off only for plain HTTP on loopback (the demo)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", not DEBUG)
# a session lasts a working day at most, and ends with the browser
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = env.bool("SESSION_EXPIRE_AT_BROWSER_CLOSE", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = env.str("SECURE_REFERRER_POLICY", "same-origin")
X_FRAME_OPTIONS = "DENY"

# HTTPS: production redirects plain HTTP and sends HSTS (a year); development does neither.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", False)
# Preloading is the domain owner's decision (hstspreload.org), not this application's: check
# --deploy does not nag about it. Every other deployment check stays on.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
# Behind a proxy that terminates TLS: "HTTP_X_FORWARDED_PROTO,https", i.e. a request is secure
# when that header says https. Only when the proxy always sets (or strips) the header itself.
_proxy_ssl_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured("SECURE_PROXY_SSL_HEADER must be HEADER,VALUE such as HTTP_X_FORWARDED_PROTO,https")
SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header) if _proxy_ssl_header else None

# Python's cyclic garbage collector, every process (web, worker, beat). The default (700, 10, 10)
# runs a full collection every few requests of a 10,000-group list: each request's rows survive
# enough young collections to count as long-lived, and a full collection walks every object of
# the process (the decoded summaries too), a tenth of the requests taking 4x the median. Fewer,
# larger young collections keep those rows young: p95 200 -> 46 ms in process (docs/benchmarks.md).
GC_THRESHOLDS = tuple(int(n) for n in env.list("GC_THRESHOLDS", default=["50000", "50", "50"]))
if len(GC_THRESHOLDS) != 3 or min(GC_THRESHOLDS) < 1:
    raise ImproperlyConfigured(f"GC_THRESHOLDS needs three positive integers, not {GC_THRESHOLDS}")

# How often (seconds) each web server process makes again, after a poll, the groups list's rows
# and orders it was asked for (consumers/live/rows.py), so that the first request after a poll
# does not pay for them; 0: never (the request that finds them out of date makes them).
GROUPS_LIST_WARM_SECONDS = env.float("GROUPS_LIST_WARM_SECONDS", 0.5)
if GROUPS_LIST_WARM_SECONDS < 0:
    raise ImproperlyConfigured("GROUPS_LIST_WARM_SECONDS must be 0 or more")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", "INFO")},
}
