"""Response headers every page gets: Server-Timing (how long the server spent, seen in browser
devtools and read by bench/bench_pages.py), the Content-Security-Policy, and Cache-Control:
no-store on whatever a signed-in user is shown."""

from __future__ import annotations

import time

from django.conf import settings


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
        if _private(request) and not response.has_header("Cache-Control"):
            response["Cache-Control"] = "no-store, private"
        return response


def _private(request) -> bool:
    if request.path.startswith(settings.STATIC_URL):
        return False
    if request.path_info.startswith("/api/"):
        return True  # credentials come with each call here (token, Basic): every answer, errors too
    user = getattr(request, "user", None)  # absent when a middleware before auth answered
    return user is not None and user.is_authenticated
