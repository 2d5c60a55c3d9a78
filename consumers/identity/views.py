"""The login and logout pages for both kinds of account, and the single sign-on round trip:
/oidc/login/ sends the browser to the provider, /oidc/callback/ signs the user in. Every login
and logout is audited; a refused sign-in is logged, not audited (anyone can send a callback)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import login as auth_login
from django.contrib.auth import logout as auth_logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from .. import audit
from . import accounts, oidc, recheck, sessions
from .access import remote_addr
from .grants import roles_of

log = logging.getLogger(__name__)
NEXT_KEY = "oidc_next"
ID_TOKEN_KEY = "oidc_id_token"
BACKEND = "consumers.identity.backends.IdentityProviderBackend"
PASSWORD_OFF = gettext_lazy("Password login is off: sign in with single sign-on.")


class LoginView(auth_views.LoginView):
    """The login page: single sign-on when OIDC_ISSUER is set, the password form unless
    PASSWORD_LOGIN is off (then a posted password is refused, 403, before it is checked)."""

    def post(self, request, *args, **kwargs):
        if not settings.PASSWORD_LOGIN:
            return refuse_password(request)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        response = super().form_valid(form)
        audit_login(self.request, "password")
        return response

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **login_options()}


def login_options() -> dict:
    return {"sso": oidc.enabled(), "password_login": settings.PASSWORD_LOGIN}


def refuse_password(request):
    context = {"password_refused": PASSWORD_OFF, "next": request.POST.get("next", ""), **login_options()}
    return render(request, "registration/login.html", context, status=403)


@login_not_required
def admin_login(request):
    """/admin/login/: Django's admin login while passwords are on (audited as the login page);
    otherwise the console's login page, where single sign-on is."""
    if not settings.PASSWORD_LOGIN:
        if request.method == "POST":
            return refuse_password(request)
        return redirect(f"{reverse('login')}?next={reverse('admin:index')}")
    was_in = request.user.is_authenticated
    response = admin.site.login(request)
    if request.method == "POST" and request.user.is_authenticated and not was_in:
        audit_login(request, "password")
    return response


@login_not_required
@require_GET
def start_sign_in(request):
    if not oidc.enabled():
        raise Http404(_("single sign-on is not configured"))
    wanted = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(wanted, {request.get_host()}, require_https=request.is_secure())
    request.session[NEXT_KEY] = wanted if safe else ""
    try:
        return oidc.authorization_redirect(request, request.build_absolute_uri(reverse("oidc-callback")))
    except oidc.SignInError as exc:
        return sign_in_failed(request, exc)


@login_not_required
@require_GET
def callback(request):
    if not oidc.enabled():
        raise Http404(_("single sign-on is not configured"))
    try:
        token, claims = oidc.complete(request)
        signed_in = accounts.sign_in(oidc.metadata()["issuer"], oidc.with_userinfo(token, claims),
                                     settings.OIDC_GROUPS_CLAIM)  # fmt: skip
    except oidc.SignInError as exc:
        return sign_in_failed(request, exc)
    except accounts.AccountError as exc:
        unusable = _("The identity provider's answer is unusable: %(why)s.") % {"why": exc}
        return sign_in_failed(request, oidc.SignInError(400, unusable))
    user = signed_in.user
    if not user.is_active:
        disabled = _("Your console account is disabled: ask an administrator.")
        return sign_in_failed(request, oidc.SignInError(403, disabled))
    wanted = request.session.pop(NEXT_KEY, "")
    auth_login(request, user, backend=BACKEND)
    request.session[ID_TOKEN_KEY] = token["id_token"]  # the id_token_hint of the logout
    recheck.remember(request, token)  # the refresh token: team membership is read again (recheck.py)
    sessions.record(request, user, claims)  # the provider's sid: a back-channel logout names it (backchannel.py)
    audit_login(request, "oidc", issuer=oidc.metadata()["issuer"], subject=claims["sub"], idp_groups=signed_in.groups,
                added=signed_in.added, removed=signed_in.removed, created=signed_in.created)  # fmt: skip
    return HttpResponseRedirect(wanted or reverse(settings.LOGIN_REDIRECT_URL))


def sign_in_failed(request, error: oidc.SignInError):
    log.warning("single sign-on refused (%s) from %s: %s", error.status, remote_addr(request), error.message)
    context = {"message": error.message, **login_options()}
    return render(request, "identity/sign_in_failed.html", context, status=error.status)


@login_not_required
@require_POST
def logout(request):
    """Out of the console, then out of the provider (RP-initiated logout, with the ID token as
    id_token_hint so it does not ask) and back to the login page. The way to the provider is a
    page that goes on by itself, not a redirect: a form's redirect to another site is refused
    by the console's Content-Security-Policy (form-action 'self'), which stays as it is."""
    id_token = request.session.get(ID_TOKEN_KEY)
    if id_token:
        sessions.signed_out(request)  # the provider's back-channel logout of this session is no news
    if request.user.is_authenticated:
        audit.record("logout", username=request.user.get_username(), remote_addr=remote_addr(request),
                     details={"method": "oidc" if id_token else "password"})  # fmt: skip
    auth_logout(request)
    if id_token and oidc.enabled():
        url = oidc.logout_url(id_token, request.build_absolute_uri(reverse("login")))
        if url:
            return render(request, "identity/provider_logout.html", {"end_session_url": url})
        messages.warning(request, _("Signed out of the console; the identity provider could not be reached, so you "
                                    "may still be signed in there."))  # fmt: skip
    return redirect(settings.LOGOUT_REDIRECT_URL)


def audit_login(request, method: str, **details) -> None:
    user = request.user
    audit.record("login", username=user.get_username(), remote_addr=remote_addr(request),
                 details={"method": method, "roles": roles_of(user), **details})  # fmt: skip
