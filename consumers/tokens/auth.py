"""Bearer tokens as credentials, throttled like passwords: a wrong token counts as a failed
login (django-axes, per address), and a locked-out address gets no answer about any token.
Not per token prefix: prefixes are not secret (the audit log names them), so counting by prefix
would let anyone lock someone else's script out with a few wrong tokens."""

from __future__ import annotations

from django.contrib.auth.signals import user_login_failed

from . import services


def _credentials(request) -> dict:
    # the address stands in for a username (never the secret in axes's tables): a lockout then
    # holds only the address that guessed
    return {"username": f"api-token@{request.META.get('REMOTE_ADDR', '')}"}


def token_user(request, secret: str):
    from axes.handlers.proxy import AxesProxyHandler

    credentials = _credentials(request)
    if AxesProxyHandler.is_locked(request, credentials):
        request.axes_locked_out = True  # AxesMiddleware answers with the lockout response
        return None
    user = services.user_for(secret, remote_addr=request.META.get("REMOTE_ADDR", ""))
    if user is None:
        user_login_failed.send(sender=__name__, credentials=credentials, request=request)
    return user
