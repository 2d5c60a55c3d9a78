"""Login throttling with django-axes (configured by AXES_* in dashboard/settings/identity.py): the answer
to a locked-out login, the audit event of a lockout, and clearing a user's failures when they
log in.

A lockout answers 429 Too Many Requests with a Retry-After header: JSON in the API's error
shape under /api/, the console's own page elsewhere (the login page, /admin/login/).
"""

from __future__ import annotations

import ipaddress
import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

AUDIT_ACTION = "login-locked-out"
STATUS = 429

log = logging.getLogger(__name__)


def lockout_response(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: what a locked-out login gets instead of the view's answer."""
    from axes.helpers import get_client_username, get_cool_off, get_failure_limit

    from ..web.errors import json_error

    cool_off = get_cool_off(request)
    username = get_client_username(request, credentials) or ""
    limit = get_failure_limit(request, credentials)
    locked = [parameter for parameter, failures in failures_by_parameter(request, credentials) if failures >= limit]
    subjects = {"username": _("the account “%(username)s”") % {"username": username},
                "ip_address": _("logins from your address")}  # fmt: skip
    what = _(" and ").join(subjects[parameter] for parameter in locked) or _("this account or address")
    duration = describe(cool_off)
    how_long = (
        _("for %(duration)s after the last failed attempt. An administrator can unlock sooner.")
        % {"duration": duration}
        if cool_off
        else _("until an administrator unlocks it.")
    )
    message = ngettext(
        "Too many failed logins: %(what)s is locked %(how_long)s",
        "Too many failed logins: %(what)s are locked %(how_long)s",
        max(1, len(locked)),
    ) % {"what": what, "how_long": how_long}
    if request.path_info.startswith("/api/"):
        response = json_error(STATUS, message)
    else:
        context = {"message": message, "duration": duration, "locked": locked, "locked_username": username}
        response = render(request, "registration/locked_out.html", context, status=STATUS)
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


def failures_by_parameter(request: HttpRequest, credentials: dict | None) -> list[tuple[str, int]]:
    """The failures within the cool-off counted for each lockout parameter on its own
    ("username": for this username from anywhere; "ip_address": from this address for any
    username), as django-axes's database handler counts them."""
    from axes.handlers.proxy import AxesProxyHandler
    from axes.helpers import get_lockout_parameters

    handler = AxesProxyHandler.get_implementation()
    if not hasattr(handler, "get_user_attempts"):  # the database handler; others cannot tell
        return []
    AxesProxyHandler.update_request(request)
    parameters = get_lockout_parameters(request, credentials)
    counted = zip(parameters, handler.get_user_attempts(request, credentials), strict=True)
    return [
        (parameter, sum(attempts.values_list("failures_since_start", flat=True)))
        for parameter, attempts in counted
        if isinstance(parameter, str)
    ]


def describe(duration) -> str:
    """30 minutes, 1 hour, 1 hour 30 minutes ("" for none)."""
    if not duration:
        return ""
    minutes = max(1, round(duration.total_seconds() / 60))
    hours, minutes = divmod(minutes, 60)
    parts = []
    if hours:
        parts.append(ngettext("%(count)s hour", "%(count)s hours", hours) % {"count": hours})
    if minutes:
        parts.append(ngettext("%(count)s minute", "%(count)s minutes", minutes) % {"count": minutes})
    return " ".join(parts)


def audit_lockout(sender, request=None, username=None, ip_address=None, **kwargs) -> None:
    """Receiver of axes's user_locked_out: one audit event when a username or an address
    becomes locked (its failures reach the limit). Axes sends the signal again for every
    failure during a lockout; those are not audited again (or anyone could write to the audit
    log at will): the admin's access attempts count them."""
    from axes.helpers import get_cool_off, get_failure_limit

    from .. import audit

    credentials = getattr(request, "axes_credentials", None)
    limit = get_failure_limit(request, credentials)
    counts = failures_by_parameter(request, credentials)
    newly = [parameter for parameter, failures in counts if failures == limit]
    if counts and not newly:
        return
    cool_off = get_cool_off(request)
    log.warning("login locked out (%s): username %r from %s", ", ".join(newly), username, ip_address)
    audit.record(
        AUDIT_ACTION,
        username=(username or "")[:150],
        remote_addr=(ip_address or "")[:64],
        details={
            "locked": newly,  # "username" (from anywhere), "ip_address" (for any username)
            "failures": dict(counts),
            "limit": limit,
            "path": getattr(request, "path", ""),
            "cooloff_seconds": int(cool_off.total_seconds()) if cool_off else None,
        },
    )


def reset_own_failures(sender, request, user, **kwargs) -> None:
    """Receiver of user_logged_in: a successful login clears the failures of that username
    (from any address), and only those. (axes's AXES_RESET_ON_SUCCESS would also clear every
    failure from the address, for any username: see dashboard/settings/identity.py.)"""
    if not settings.AXES_ENABLED:
        return
    from axes.models import AccessAttempt

    AccessAttempt.objects.filter(username=user.get_username()).delete()


def client_ip_behind_one_proxy(request: HttpRequest) -> str | None:
    """For AXES_CLIENT_IP_CALLABLE behind exactly one reverse proxy that appends the address it
    saw to X-Forwarded-For (nginx: proxy_add_x_forwarded_for): the last entry, the one the proxy
    wrote. Earlier entries came from the client and could be anything; without the header (a
    request that did not come through the proxy) REMOTE_ADDR."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    last = forwarded.rsplit(",", 1)[-1].strip()
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return request.META.get("REMOTE_ADDR")
