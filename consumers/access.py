"""What every view shares: access checks, JSON errors for /api/, and the error page."""

from __future__ import annotations

import base64
import functools

from django.contrib.auth import authenticate
from django.contrib.auth.decorators import login_not_required, permission_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views import defaults
from django.views.decorators.http import require_GET

from .models import Cluster
from .roles import VIEW, perm


def console_page(view):
    """A read-only page: GET only, for anyone with a role."""
    return require_GET(permission_required(perm(VIEW), raise_exception=True)(view))


def api_view(view):
    """A JSON endpoint for scripts: the session or HTTP Basic credentials; JSON errors."""

    @login_not_required
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            response = json_error(405, f"method {request.method} not allowed here; use GET")
            response["Allow"] = "GET, HEAD"
            return response
        if not request.user.is_authenticated:
            user = _basic_auth_user(request)
            if user is None:
                response = json_error(401, "authentication required (session or HTTP Basic)")
                response["WWW-Authenticate"] = 'Basic realm="rocketmq-console"'
                return response
            request.user = user
        if not request.user.has_perm(perm(VIEW)):
            return json_error(403, "your account has no console role")
        return view(request, *args, **kwargs)

    return wrapper


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
