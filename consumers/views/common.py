"""What every view shares: access checks and the error page."""

from __future__ import annotations

import base64
import functools

from django.contrib.auth import authenticate
from django.contrib.auth.decorators import login_not_required, permission_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from ..models import Cluster
from ..roles import VIEW, perm


def console_page(view):
    """A read-only page: GET only, for anyone with a role."""
    return require_GET(permission_required(perm(VIEW), raise_exception=True)(view))


def api_view(view):
    """A JSON endpoint for scripts: the session or HTTP Basic credentials; JSON errors."""

    @login_not_required
    @require_GET
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            user = _basic_auth_user(request)
            if user is None:
                response = JsonResponse({"error": "authentication required (session or HTTP Basic)"}, status=401)
                response["WWW-Authenticate"] = 'Basic realm="rocketmq-console"'
                return response
            request.user = user
        if not request.user.has_perm(perm(VIEW)):
            return JsonResponse({"error": "your account has no console role"}, status=403)
        return view(request, *args, **kwargs)

    return wrapper


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
