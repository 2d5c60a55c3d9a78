"""Who may reach a view: the decorators every page, form and API endpoint is wrapped in (a role
somewhere; for the API, a session, a Bearer token or Basic, and the cross-site and schema checks
of writes), and the helpers views ask what of a cluster the user's scope shows. The JSON error
shape and the error pages are consumers/web/errors.py's."""

from __future__ import annotations

import base64
import functools
import re

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import DisallowedHost, PermissionDenied
from django.http import Http404
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from .. import audit
from ..models import Cluster
from ..web import apischema
from ..web.apischema import Obj
from ..web.errors import json_error
from . import lockout
from .grants import scope_of
from .roles import VIEW
from .tokens import membership
from .tokens.auth import TokenLockedOut, token_user
from .tokens.services import prefix_of

# what the console's own API clients send to say which they are (consumers/apiclient): the MCP
# server ("mcp/<version>") and the command line ("cli/<version>"); anything else is not recorded
CLIENT_HEADER = "X-Console-Client"
_CLIENT = re.compile(r"(mcp|cli)/[0-9A-Za-z.+-]{1,40}")


def _with_a_role(view):
    """Refused (403) to a signed-in user who holds no role anywhere; what they see within
    their scope is each view's to filter (group_or_404, visible_clusters)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not scope_of(request.user).may_somewhere(VIEW):
            raise PermissionDenied(_("your account has no console role"))
        return view(request, *args, **kwargs)

    return wrapper


def console_page(view):
    """A read-only page: GET only, for anyone with a role."""
    return require_GET(_with_a_role(view))


def console_action(view):
    """A form that changes something: POST only (CSRF-checked), for anyone with a role; what
    the user may do is decided by the service the view calls."""
    return require_POST(_with_a_role(view))


def api_view(view=None, *, methods: tuple[str, ...] = ("GET",), body: Obj | None = None):
    """A JSON endpoint for scripts, with JSON errors.

    Who: a session (the console's own pages), or a per-user token sent as `Authorization:
    Bearer` (scripts). HTTP Basic only when API_BASIC_AUTH is on, and the API never asks for it
    (no `WWW-Authenticate: Basic`): a browser that was once given a password in its prompt
    replays it on every request, cross-site forms included.

    Writes (POST): `Content-Type: application/json` (a cross-site HTML form cannot send it),
    no cross-site Origin / Sec-Fetch-Site whatever the credentials, CSRF with a session, and
    the body checked against its schema (`body`; none given: an empty object) before the view
    runs, so nothing reaches a broker or the audit log unchecked. The view finds the checked
    body in `request.json`."""
    if view is None:
        return lambda v: api_view(v, methods=methods, body=body)
    allowed = (*methods, "HEAD") if "GET" in methods else methods
    schema = body or Obj({})

    @login_not_required
    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method not in allowed:
            response = json_error(405, f"method {request.method} not allowed here; use {', '.join(methods)}")
            response["Allow"] = ", ".join(allowed)
            return response
        user, via = _api_user(request)
        if user is None:
            return _unauthenticated(request, via)
        request.user = user
        if request.method == "POST":
            refused = _write_refused(request, via)
            if refused is not None:
                return refused
        if not scope_of(user).may_somewhere(VIEW):
            return json_error(403, "your account has no console role")
        if request.method == "POST":
            try:
                request.json = apischema.parse(request.body, schema)
            except apischema.SchemaError as exc:
                return json_error(400, str(exc), field=exc.field)
        how = _how_called(request, via)
        with audit.calling(**how):
            response = view(request, *args, **kwargs)
        if how.get("client"):
            _record_call(request, response, how)
        return response

    return wrapper


def _how_called(request, via: str) -> dict:
    """The token's prefix (never the secret) and the console client that sent the request."""
    label = request.headers.get(CLIENT_HEADER, "")
    how = {"client": label if _CLIENT.fullmatch(label) else ""}
    if via == "token":
        how["token"] = prefix_of(request.headers["Authorization"].partition(" ")[2].strip())
    return how


def _record_call(request, response, how: dict) -> None:
    """Every call of the MCP server and the command line is in the audit log, reads included:
    an agent's investigation is on record as what it looked at. The path's cluster and group
    are the event's own (so the log shows it only to whom they show); the query is recorded by
    its parameter names, as a body search's text is no business of the log's."""
    match = request.resolver_match
    args = dict(match.kwargs) if match else {}
    cluster, group = str(args.pop("cluster", "")), str(args.pop("group", ""))
    details = {
        "call": match.url_name if match else request.path[:200],
        "method": request.method,
        "status": response.status_code,
        "args": {k: str(v)[:255] for k, v in args.items()},
        "query": sorted(request.GET)[:20],
        "api": how,
    }
    audit.record("api-call", username=request.user.get_username(), remote_addr=remote_addr(request),
                 cluster=cluster[:64], group=group[:255], details=details)  # fmt: skip


def _api_user(request):
    """(user or None, how): the Authorization header if there is one, else the session."""
    header = request.headers.get("Authorization", "")
    if not header:
        return (request.user if request.user.is_authenticated else None), "session"
    scheme, _sep, credentials = header.partition(" ")
    if scheme.lower() == "bearer":
        try:
            return token_user(request, credentials.strip()), "token"
        except TokenLockedOut as locked:
            request.token_locked_for = locked.left
            return None, "token-locked"
    if scheme.lower() == "basic" and settings.API_BASIC_AUTH:
        return _basic_auth_user(request, credentials.strip()), "basic"
    return None, "scheme"


def _unauthenticated(request, via: str):
    if via == "token-locked":
        left = request.token_locked_for
        message = (
            f"too many refused tokens with this prefix from your address: locked for {lockout.describe(left)} "
            "after the last refusal (other tokens and password logins are not affected)"
        )
        response = json_error(429, message)
        response["Retry-After"] = str(max(1, int(left.total_seconds())))
        return response
    messages = {
        "session": "authentication required: send Authorization: Bearer <token> (see API tokens)",
        "token": "the token is not valid (unknown, revoked or expired)",
        "basic": "the user name or password is not valid",
        "scheme": "unsupported Authorization scheme; send Authorization: Bearer <token>",
    }
    response = json_error(401, messages[via])
    response["WWW-Authenticate"] = 'Bearer realm="rocketmq-console"'
    return response


def _write_refused(request, via: str):
    if request.content_type != "application/json":
        return json_error(415, "writes need Content-Type: application/json")
    cross = cross_site(request)
    if cross:
        return json_error(403, f"cross-site write refused: {cross}")
    if via == "token":
        refused = membership.write_refused(request)
        if refused is not None:
            return json_error(*refused)
    if via == "session":
        refused = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
        if refused is not None:
            return json_error(403, "CSRF check failed: send the X-CSRFToken header, or use an API token")
    return None


def cross_site(request) -> str | None:
    """Why a request comes from another site (None: it does not, or cannot tell: not a browser).
    Browsers send Sec-Fetch-Site and Origin on every POST; scripts usually send neither."""
    site = request.headers.get("Sec-Fetch-Site")
    if site and site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {site}"
    origin = request.headers.get("Origin")
    if origin is None:
        return None
    try:
        own = f"{request.scheme}://{request.get_host()}"
    except DisallowedHost:
        return "unknown host"
    if origin != own and origin not in settings.CSRF_TRUSTED_ORIGINS:
        return f"Origin {origin} is not this site"
    return None


def remote_addr(request) -> str:
    return request.META.get("REMOTE_ADDR", "")


def _basic_auth_user(request, credentials: str):
    try:
        username, _sep, password = base64.b64decode(credentials, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return authenticate(request, username=username, password=password)


def cluster_or_404(request, name: str, group: str | None = None) -> Cluster:
    """The cluster `name`, and with `group` one of its groups, as the user's scope allows:
    outside it a 404 that says the same as for a name that does not exist (names do not leak)."""
    scope = scope_of(request.user)
    if group is not None and not scope.sees_group(name, group):
        raise Http404(_("No group %(group)s in %(cluster)s") % {"group": group, "cluster": name})
    found = Cluster.objects.filter(name=name).first() if scope.sees_cluster(name) else None
    if found is None:
        raise Http404(_("No cluster %(cluster)s") % {"cluster": name})
    return found


def visible_cluster(request, name: str, group: str | None = None) -> Cluster | None:
    """cluster_or_404 for the API: None where the page would answer 404."""
    try:
        return cluster_or_404(request, name, group)
    except Http404:
        return None


def visible_clusters(request, clusters=None) -> list[Cluster]:
    """The clusters (all, or `clusters`) on which the user sees at least one group."""
    scope = scope_of(request.user)
    found = list(Cluster.objects.all() if clusters is None else clusters)
    return found if scope.everything else [c for c in found if scope.sees_cluster(c.name)]


def no_role_page(request):
    """The 403 page of a user signed in without any role (a new single sign-on user, before an
    admin gives one), which says so and names the IdP groups the provider sent, instead of
    naming a role that does not allow this; None for anyone else (the usual 403 page)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or scope_of(user).may_somewhere(VIEW):
        return None
    return render(request, "identity/no_access.html", {"idp_groups": _idp_groups(user)}, status=403)


def _idp_groups(user) -> list[str]:
    from .models import IdpAccount

    account = IdpAccount.objects.filter(user=user).first()
    return list(account.groups) if account else []
