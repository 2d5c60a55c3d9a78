"""Authentication backends: passwords (unless PASSWORD_LOGIN is off) and identity provider
sign-ins (which only the OIDC callback makes, consumers/identity/views.py)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import ModelBackend


class PasswordBackend(ModelBackend):
    """Django's username and password check, refusing every password while PASSWORD_LOGIN is
    off: the login page, /admin/login/ and the API's Basic auth all ask here."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not settings.PASSWORD_LOGIN:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class IdentityProviderBackend(ModelBackend):
    """The backend a single sign-on session is recorded with: it authenticates nothing itself
    (the callback validated the ID token), and finds the session's user again as ModelBackend
    does (an inactive user is signed out)."""

    def authenticate(self, request, **credentials):
        return None
