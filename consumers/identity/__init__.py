"""Who the console's users are and what each may see and do, and the one module every feature
imports that from: `from ..identity import scope_of, console_page, VIEW, ...`. No feature
reaches into the modules below (tests/test_structure.py keeps it so).

- roles.py: the four roles (Django groups) and their permissions, the ACCESS table of every
  URL; users.py: local users and their role.
- grants.py: grants, roles on clusters and group patterns (models.Grant, given to IdP groups,
  local groups or users), read per request into a scope.Scope that every view and service asks;
  bodies.py: who may read message bodies (asked of that scope), and data with them hidden.
- access.py: the decorators of pages, forms and the API (session, Bearer token, Basic), and what
  of a cluster the user's scope shows.
- single sign-on through an OpenID Connect provider (oidc.py), the users and IdP groups it
  records (accounts.py, from the claims as claims.py reads them), team membership re-read
  (recheck.py), the login and logout pages (views.py), the authentication backends; the
  provider's back-channel logout (backchannel.py) ending sessions (sessions.py); Keycloak's admin
  API read for token writes (keycloak_admin.py).
- tokens/: per-user API tokens (page, hashing, Bearer authentication, throttling apart from
  passwords); lockout.py: login throttling with django-axes.

consumers/models.py imports the models of this package while Django loads its apps, which
imports this module first: so nothing here is imported until it is asked for (PEP 562): each
public name maps to the module that defines it, imported on first use.
"""

from __future__ import annotations

import importlib

__all__ = [
    # roles.py
    "ACCESS",
    "ADMINISTER",
    "APPROVE",
    "REQUEST",
    "ROLES",
    "ROLE_PERMISSIONS",
    "VIEW",
    "access_markdown",
    "roles_with",
    # bodies.py
    "hide_bodies",
    "may_read_bodies",
    # users.py
    "RoleError",
    "create_or_update_user",
    "ensure_roles",
    # grants.py and scope.py
    "EVERY",
    "EVERYTHING",
    "NOTHING",
    "PatternError",
    "Rule",
    "Scope",
    "forget_scope",
    "patterns",
    "roles_of",
    "scope_from_wire",
    "scope_of",
    "scope_q",
    "scope_to_wire",
    "teams_covering",
    "within",
    # access.py
    "api_view",
    "cluster_or_404",
    "console_action",
    "console_page",
    "cross_site",
    "no_role_page",
    "remote_addr",
    "visible_cluster",
    "visible_clusters",
    # models
    "ApiToken",
    "Grant",
    "IdpAccount",
    "TokenFailure",
    # API tokens
    "create_token",
    "revoke_token",
    "token_create",
    "token_list",
    "token_revoke",
    # login and logout, login throttling
    "LoginView",
    "admin_login",
    "audit_lockout",
    "backchannel_logout",
    "logout",
    "reset_own_failures",
    "sign_in_callback",
    "start_sign_in",
]

# Each public name: "module" (under this package) that defines it, or "module:name" when the
# public name differs from the one it has there.
_WHERE: dict[str, str] = {
    "ACCESS": "roles",
    "ADMINISTER": "roles",
    "APPROVE": "roles",
    "REQUEST": "roles",
    "ROLES": "roles",
    "ROLE_PERMISSIONS": "roles",
    "VIEW": "roles",
    "access_markdown": "roles",
    "hide_bodies": "bodies",
    "may_read_bodies": "bodies",
    "roles_of": "grants",
    "roles_with": "roles",
    "RoleError": "users",
    "create_or_update_user": "users",
    "ensure_roles": "users",
    "EVERY": "scope",
    "EVERYTHING": "scope",
    "NOTHING": "scope",
    "PatternError": "grants",
    "Rule": "scope",
    "Scope": "scope",
    "forget_scope": "grants",
    "patterns": "grants",
    "scope_from_wire": "scope:from_wire",
    "scope_of": "grants",
    "scope_q": "grants",
    "teams_covering": "grants",
    "scope_to_wire": "scope:to_wire",
    "within": "grants",
    "api_view": "access",
    "cluster_or_404": "access",
    "console_action": "access",
    "console_page": "access",
    "cross_site": "access",
    "no_role_page": "access",
    "remote_addr": "access",
    "visible_cluster": "access",
    "visible_clusters": "access",
    "ApiToken": "tokens.models",
    "Grant": "models",
    "IdpAccount": "models",
    "TokenFailure": "tokens.models",
    "create_token": "tokens.services:create",
    "revoke_token": "tokens.services:revoke",
    "token_create": "tokens.views",
    "token_list": "tokens.views",
    "token_revoke": "tokens.views",
    "LoginView": "views",
    "admin_login": "views",
    "audit_lockout": "lockout",
    "backchannel_logout": "backchannel",
    "logout": "views",
    "reset_own_failures": "lockout",
    "sign_in_callback": "views:callback",
    "start_sign_in": "views",
}


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, defined_as = where.partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), defined_as or name)
    globals()[name] = value  # asked once: a plain attribute from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
