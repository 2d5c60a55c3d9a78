"""Response headers every page gets: Server-Timing (how long the server spent, seen in browser
devtools and read by bench/bench_pages.py), the Content-Security-Policy, and Cache-Control:
no-store on whatever a signed-in user is shown."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.shortcuts import render

from ..jobs import redis_client
from .errors import database_unavailable, database_unavailable_cause, json_error

log = logging.getLogger(__name__)


class ServerTimingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        response["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        return response


# Scripts and styles come only from our own static files (htmx and plotly.js are served
# locally). Styles allow 'unsafe-inline' because plotly.js styles the chart it draws through
# a style element; no script may be inline or evaluated.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


class NoStoreMiddleware:
    """`Cache-Control: no-store, private` on every response to a signed-in user and under /api/.

    Pages, exports and API answers carry message bodies, audit entries and report data: no
    shared proxy may keep them, and neither may the browser's disk cache, where the next user
    of the machine (or anything reading the profile) would find them after logout. A response
    that chose its own Cache-Control keeps it; static files (no data, the same for everyone)
    stay cacheable. The user is read after the view ran: the API signs its caller in inside the
    view (request.user is set there), so before it every API call looks anonymous."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # the header first: a database-outage 503 has its own, and asking it for the user then
        # would read the session from the database that is down (a 500 instead of the 503)
        if not response.has_header("Cache-Control") and _private(request):
            response["Cache-Control"] = "no-store, private"
        return response


def _private(request) -> bool:
    if request.path.startswith(settings.STATIC_URL):
        return False
    if request.path_info.startswith("/api/"):
        return True  # credentials come with each call here (token, Basic): every answer, errors too
    user = getattr(request, "user", None)  # absent when a middleware before auth answered
    return user is not None and user.is_authenticated


class RedisUnavailableMiddleware:
    """503, never a 500, while Redis does not answer.

    The latest state of every cluster is in Redis (consumers/live/snapshots.py), and so is
    Celery's queue. A Redis connection error or timeout raised while handling a request (or
    one that a Celery error was raised from) answers 503: JSON in the API's error shape under
    /api/, elsewhere the console's own page with a banner saying since when and why. Pages
    that do not read Redis (login, tokens, changes, audit) never get here and keep working."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        cause = redis_client.unavailable_cause(exception)
        if cause is None:
            return None
        outage = redis_client.note_unavailable(cause)
        log.warning("%s: %s %s answered 503", outage.message, request.method, request.path)
        if request.path.startswith("/api/"):
            return json_error(503, outage.message, unavailable_since=outage.since.isoformat())
        return render(request, "consumers/unavailable.html", {"redis_outage": outage}, status=503)


class DatabaseUnavailableMiddleware:
    """503, never a 500, while the database does not answer (consumers/web/errors.py says what counts).

    This one answers for an error raised by a view; one raised by a middleware before the view
    (the session and the user are read there, before any view runs) goes to the 500 handler,
    which answers the same 503 (errors.handle_500). Pages get the console's page with a banner
    saying since when, the API its JSON error shape; neither asks the database anything."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        cause = database_unavailable_cause(exception)
        return None if cause is None else database_unavailable(request, cause)
