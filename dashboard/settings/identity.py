"""Identity: passwords, single sign-on (OpenID Connect), login throttling and the API's HTTP Basic."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from .environment import env

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out login before any password is checked. Passwords
# are checked as by ModelBackend unless PASSWORD_LOGIN is off; single sign-on sessions name the
# second one (consumers/identity/backends.py).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "consumers.identity.backends.PasswordBackend",
    "consumers.identity.backends.IdentityProviderBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "consumers:home"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on with OpenID Connect (consumers/identity/oidc.py): on when OIDC_ISSUER is set.
# The provider's endpoints and keys come from {OIDC_ISSUER}/.well-known/openid-configuration.
OIDC_ISSUER = (env.str("OIDC_ISSUER", "") or "").rstrip("/")
OIDC_CLIENT_ID = env.str("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = env.secret("OIDC_CLIENT_SECRET") or ""
# the claim of the ID token that lists the user's groups (a nested claim as a.b: realm_access.roles)
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", "groups")
OIDC_SCOPES = env.list("OIDC_SCOPES", default=["openid", "profile", "email"])
# seconds the provider may take to answer (discovery, keys, the token exchange)
OIDC_TIMEOUT = env.int("OIDC_TIMEOUT", 10)
# how old a single sign-on session's team membership may get before it is read again from the
# provider (it is read again before every write whatever its age)
OIDC_RECHECK_SECONDS = env.int("OIDC_RECHECK_SECONDS", 300)
# Keycloak only: an API token's write asks Keycloak's admin API (the console client's service
# account, realm-management's view-users role) whether its owner is still enabled and in which
# groups, once the provider's last word on them is older than OIDC_RECHECK_SECONDS: a user
# disabled, deleted or removed from a group there loses token writes within that bound
OIDC_KEYCLOAK_ADMIN_API = env.bool("OIDC_KEYCLOAK_ADMIN_API", False)
# without OIDC_KEYCLOAK_ADMIN_API the console cannot ask: an API token of a single sign-on user
# writes only while the provider confirmed the owner's groups (a sign-in or a session's re-check)
# less than this many seconds ago, and not ended their sessions (back-channel logout) since
OIDC_TOKEN_MEMBERSHIP_MAX_AGE = env.int("OIDC_TOKEN_MEMBERSHIP_MAX_AGE", 86400)
if OIDC_ISSUER:
    # plain HTTP only to this machine (the development Keycloak): tokens and secrets cross it
    if not OIDC_ISSUER.startswith(("https://", "http://127.0.0.1:", "http://localhost:")):
        raise ImproperlyConfigured(f"OIDC_ISSUER must be the provider's https:// URL, not {OIDC_ISSUER!r}")
    if not OIDC_CLIENT_ID or not OIDC_CLIENT_SECRET:
        raise ImproperlyConfigured("OIDC_ISSUER is set: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (or _FILE) are needed")
    if "openid" not in OIDC_SCOPES:
        raise ImproperlyConfigured(f"OIDC_SCOPES must include openid, not {','.join(OIDC_SCOPES)!r}")
    if OIDC_KEYCLOAK_ADMIN_API and "/realms/" not in OIDC_ISSUER:
        raise ImproperlyConfigured(f"OIDC_KEYCLOAK_ADMIN_API needs a Keycloak issuer, not {OIDC_ISSUER!r}")
# Username and password logins (the login page, /admin/login/, API_BASIC_AUTH). Off: everyone
# signs in through the identity provider, the break-glass admin too (README, Single sign-on).
PASSWORD_LOGIN = env.bool("PASSWORD_LOGIN", True)
if not PASSWORD_LOGIN and not OIDC_ISSUER:
    raise ImproperlyConfigured("PASSWORD_LOGIN is off and OIDC_ISSUER is not set: nobody could log in")

# Login throttling (django-axes): AXES_FAILURE_LIMIT failed logins for one username (from any
# address), or from one address (for any usernames), lock that username or address out for
# AXES_COOLOFF_TIME after the last failure. Every failed authenticate(request, ...) counts: the
# login page, /admin/login/ and any password the API checks. Unlock in the admin (Access
# attempts: delete) or with manage.py axes_reset_username NAME / axes_reset_ip ADDRESS.
AXES_ENABLED = env.bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", 5)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(f"AXES_FAILURE_LIMIT must be at least 1, not {AXES_FAILURE_LIMIT}")
AXES_COOLOFF_TIME = env.duration("AXES_COOLOFF_TIME", "30m")
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own, not the pair
# A successful login clears that username's failures only (consumers/identity/lockout.py), not the
# failures from its address: axes's own AXES_RESET_ON_SUCCESS clears both, which would let
# someone with an account of their own reset an address lockout by logging in between guesses.
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "consumers.identity.lockout.lockout_response"
# The client address is REMOTE_ADDR. Behind a reverse proxy that is the proxy's own address, so
# all clients would share one address lockout: name a function of the request that returns the
# client's address instead (see .env.example; consumers.identity.lockout.client_ip_behind_one_proxy).
AXES_CLIENT_IP_CALLABLE = env.str("AXES_CLIENT_IP_CALLABLE", None)

# The API authenticates scripts by per-user tokens (Authorization: Bearer). HTTP Basic with a
# password is for old scripts only: off unless set, and never asked for by the API.
API_BASIC_AUTH = env.bool("API_BASIC_AUTH", False)
