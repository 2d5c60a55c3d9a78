"""Bearer tokens as credentials, throttled like passwords: a wrong token counts as a failed
login (django-axes, per address and per token prefix), and a locked-out address gets no answer
about any token."""

from __future__ import annotations

from django.contrib.auth.signals import user_login_failed

from . import services


def _credentials(secret: str) -> dict:
    # the prefix only: never the secret itself in axes's tables
    return {"username": f"api-token:{secret[len(services.PREFIX) :][:8]}"}


def token_user(request, secret: str):
    from axes.handlers.proxy import AxesProxyHandler

    credentials = _credentials(secret)
    if AxesProxyHandler.is_locked(request, credentials):
        request.axes_locked_out = True  # AxesMiddleware answers with the lockout response
        return None
    user = services.user_for(secret, remote_addr=request.META.get("REMOTE_ADDR", ""))
    if user is None:
        user_login_failed.send(sender=__name__, credentials=credentials, request=request)
    return user
