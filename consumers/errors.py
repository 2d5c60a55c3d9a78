"""The error answers every view shares: the one JSON error shape under /api/, the bad-request
page, and the handlers Django calls for 400, 403, 404 and 500 (dashboard/urls.py): JSON under
/api/, the console's own pages elsewhere."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.views import defaults

from . import identity


def json_error(status: int, message: str, **details) -> JsonResponse:
    """The one error shape under /api/: {"error": message, "status": code, ...details}."""
    return JsonResponse({"error": message, "status": status, **details}, status=status)


def bad_request(request, message: str):
    return render(request, "consumers/bad_request.html", {"message": message}, status=400)


def _said(exception) -> str:
    """What a refusal or a not-found said, when a view said it (a URL that matched nothing
    says which patterns it tried: never shown)."""
    if isinstance(exception, PermissionDenied) or type(exception) is Http404:
        return str(exception)
    return ""


def _api_or_page(template: str | None, status: int, message: str):
    """An error handler that answers JSON under /api/ and the console's own page elsewhere."""

    def handler(request, exception=None):
        said = _said(exception)
        if request.path.startswith("/api/"):
            return json_error(status, said or (f"{message}: {request.path}" if status == 404 else message))
        if template is None:  # a 500: the request may be what failed, so no request context
            return defaults.server_error(request)
        if status == 403:
            no_role = identity.no_role_page(request)  # signed in without any role: a page that says so
            if no_role is not None:
                return no_role
        return render(request, template, {"exception": said, "message": said or message}, status=status)

    return handler


handle_400 = _api_or_page("consumers/bad_request.html", 400, "bad request")
handle_403 = _api_or_page("403.html", 403, "permission denied")
handle_404 = _api_or_page("404.html", 404, "no such resource")
# templates/500.html: the console's own page, never a traceback
handle_500 = _api_or_page(None, 500, "server error")
