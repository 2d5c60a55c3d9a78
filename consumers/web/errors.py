"""The error answers every view shares: the one JSON error shape under /api/, the bad-request
page, the database-outage answer, and the handlers Django calls for 400, 403, 404 and 500
(dashboard/urls.py): JSON under /api/, the console's own pages elsewhere."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import sys
import threading

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import utils as db_utils
from django.db.backends.signals import connection_created
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.views import defaults

from .. import identity

log = logging.getLogger(__name__)


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
_server_error = _api_or_page(None, 500, "server error")


def handle_500(request, exception=None):
    """A database that does not answer is a 503, wherever it failed. Django calls this handler
    for an error raised by a middleware as well as by a view, while it is handling that error
    (so sys.exception() is it): the session and the user are read by middleware before any view
    runs, where DatabaseUnavailableMiddleware's process_exception never sees them."""
    cause = database_unavailable_cause(sys.exception())
    if cause is not None:
        return database_unavailable(request, cause)
    return _server_error(request, exception)


# The database outage: a 503 that says since when, never a 500
#
# What counts as "does not answer": any InterfaceError (the connection is closed or unusable),
# and an OperationalError that the driver raised without a SQLSTATE (it never reached the
# server: refused, reset, timed out) or with one of these: 08 connection exception, 53
# insufficient resources (too many connections, disk full), 57P01-57P03 (shut down, crashed,
# starting up or shutting down), 58 system error (I/O); SQLite's equivalents. A deadlock, a lock
# or statement timeout (SQLite's "database is locked" too) or "no such table" are
# OperationalErrors as well, but about one statement while the database answers others: they
# stay the console's 500, not a banner saying the database is down.
UNAVAILABLE_SQLSTATES = ("08", "53", "57P01", "57P02", "57P03", "58")
UNAVAILABLE_SQLITE = ("SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_FULL")
RETRY_AFTER = 10  # seconds: a browser showing the page reloads it after this


def database_unavailable_cause(exception: BaseException | None) -> Exception | None:
    """The database error behind `exception` (itself, or what it was raised from or during)
    when it says the database does not answer; else None."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        if isinstance(exception, (db_utils.OperationalError, db_utils.InterfaceError)):
            return exception if _says_unavailable(exception) else None
        seen.add(id(exception))
        exception = exception.__cause__ or exception.__context__
    return None


def _says_unavailable(error: Exception) -> bool:
    if isinstance(error, db_utils.InterfaceError):
        return True
    driver = error.__cause__  # Django's error is raised from the driver's (psycopg, sqlite3)
    sqlstate = getattr(driver, "sqlstate", None)
    if sqlstate:
        return sqlstate.startswith(UNAVAILABLE_SQLSTATES)
    sqlite_name = getattr(driver, "sqlite_errorname", None)
    if sqlite_name:
        return sqlite_name.startswith(UNAVAILABLE_SQLITE)
    return True


@dataclasses.dataclass(frozen=True)
class DatabaseOutage:
    since: dt.datetime  # the first failure of this outage seen by this process
    error: str  # the latest error, for the server's log only

    @property
    def message(self) -> str:
        since = timezone.localtime(self.since).strftime("%Y-%m-%d %H:%M:%S %Z")
        return _(
            "Database unavailable since %(since)s: the console's database does not answer. Pages, sign-in and the "
            "API answer again as soon as it does."
        ) % {"since": since}


# Since when is kept in this process's memory, as for Redis (consumers/jobs/redis_client.py): enough
# for the banner and /healthz. It ends when a connection to the database is made again (any
# query after an outage opens a new one: Django drops a connection that failed) or /readyz's
# query answers.
_lock = threading.Lock()
_outage: DatabaseOutage | None = None


def note_database_unavailable(error: Exception) -> DatabaseOutage:
    global _outage
    text = _first_line(error)
    with _lock:
        _outage = DatabaseOutage(since=_outage.since if _outage else timezone.now(), error=text)
        return _outage


def note_database_answered(**kwargs) -> None:
    global _outage
    with _lock:
        _outage = None


connection_created.connect(note_database_answered, dispatch_uid="consumers.web.errors.database_answered")


def database_outage() -> DatabaseOutage | None:
    return _outage


def database_unavailable(request, cause: Exception) -> HttpResponse:
    """The 503 for a database outage. It asks the database nothing, so it cannot fail the same
    way: no request context (the context processors read the user and count pending changes and
    alerts), no user, and a session left unsaved."""
    outage = note_database_unavailable(cause)
    log.warning("database unavailable since %s (%s): %s %s answered 503", outage.since.isoformat(),
                outage.error, request.method, request.path)  # fmt: skip
    session = getattr(request, "session", None)
    if session is not None:
        session.modified = False  # SessionMiddleware would save it: to the database that is down
    if request.path.startswith("/api/"):
        response = json_error(503, outage.message, unavailable_since=outage.since.isoformat())
    else:
        context = {
            "message": outage.message,
            "retry_after": RETRY_AFTER if request.method in ("GET", "HEAD") else None,  # never repeat a POST
            "LANGUAGE_CODE": translation.get_language(),
        }
        response = HttpResponse(render_to_string("consumers/database_unavailable.html", context), status=503)
    response["Retry-After"] = str(RETRY_AFTER)
    response["Cache-Control"] = "no-store"
    # logged above as a warning: Django's own log of a 5xx would add a traceback per request
    # for as long as the outage lasts (the attribute is how Django marks a response logged)
    response._has_been_logged = True
    return response


def _first_line(error: Exception) -> str:
    """The error for the log: its first line, without the database password."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    password = settings.DATABASES["default"].get("PASSWORD")
    return text.replace(password, "***") if password else text
