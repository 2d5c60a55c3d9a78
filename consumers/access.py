"""What every view shares: access checks, JSON errors for /api/, and the error page."""

from __future__ import annotations

import base64
import functools

from django.contrib.auth import authenticate
from django.contrib.auth.decorators import login_not_required, permission_required
from django.http import JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, render
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from .models import Cluster
from .roles import VIEW, perm


def console_page(view):
    """A read-only page: GET only, for anyone with a role."""
    return require_GET(permission_required(perm(VIEW), raise_exception=True)(view))


def console_action(view):
    """A form that changes something: POST only (CSRF-checked), for anyone with a role; what
    the user may do is decided by the service the view calls."""
    return require_POST(permission_required(perm(VIEW), raise_exception=True)(view))


def api_view(view=None, *, methods: tuple[str, ...] = ("GET",)):
    """A JSON endpoint for scripts: the session or HTTP Basic credentials; JSON errors. Writes
    (POST) with a session are CSRF-checked; with HTTP Basic there is no cookie to forge."""
    if view is None:
        return lambda v: api_view(v, methods=methods)
    allowed = (*methods, "HEAD") if "GET" in methods else methods

    @login_not_required
    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method not in allowed:
            response = json_error(405, f"method {request.method} not allowed here; use {', '.join(methods)}")
            response["Allow"] = ", ".join(allowed)
            return response
        if not request.user.is_authenticated:
            user = _basic_auth_user(request)
            if user is None:
                response = json_error(401, "authentication required (session or HTTP Basic)")
                response["WWW-Authenticate"] = 'Basic realm="rocketmq-console"'
                return response
            request.user = user
        elif request.method == "POST":
            refused = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
            if refused is not None:
                return json_error(403, "CSRF check failed: send the X-CSRFToken header, or use HTTP Basic")
        if not request.user.has_perm(perm(VIEW)):
            return json_error(403, "your account has no console role")
        return view(request, *args, **kwargs)

    return wrapper


def remote_addr(request) -> str:
    return request.META.get("REMOTE_ADDR", "")


def json_error(status: int, message: str, **details) -> JsonResponse:
    """The one error shape under /api/: {"error": message, "status": code, ...details}."""
    return JsonResponse({"error": message, "status": status, **details}, status=status)


def _basic_auth_user(request):
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return None
    try:
        username, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return authenticate(request, username=username, password=password)


def cluster_or_404(name: str) -> Cluster:
    return get_object_or_404(Cluster, name=name)


def bad_request(request, message: str):
    return render(request, "consumers/bad_request.html", {"message": message}, status=400)


def _api_or_page(default_handler, status: int, message: str):
    """An error handler that answers JSON under /api/ and the normal page elsewhere."""

    def handler(request, exception=None):
        if request.path.startswith("/api/"):
            return json_error(status, f"{message}: {request.path}" if status == 404 else message)
        return default_handler(request, exception) if exception is not None else default_handler(request)

    return handler


handle_400 = _api_or_page(defaults.bad_request, 400, "bad request")
handle_403 = _api_or_page(defaults.permission_denied, 403, "permission denied")
handle_404 = _api_or_page(defaults.page_not_found, 404, "no such resource")
handle_500 = _api_or_page(defaults.server_error, 500, "server error")
