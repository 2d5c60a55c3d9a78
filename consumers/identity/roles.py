"""Roles are Django groups with a fixed set of permissions (created by a migration).

viewer reads everything; operator may also request resets and redrives; approver may approve
them (someone else's: a request is never approved by its author); admin may do all of it and
manage clusters, alert rules and channels. Silencing and acknowledging alerts is an
operator's (REQUEST).

Pure names and tables: what a user holds is read by grants.py (which imports this), and who may
read message bodies by bodies.py.
"""

from __future__ import annotations

from dataclasses import dataclass

VIEW = "view_console"
REQUEST = "request_change"
APPROVE = "approve_change"
# the admin role's own permission, held on a scope like the others (cancel someone else's request)
ADMINISTER = "change_cluster"
CLUSTER_MODEL_PERMISSIONS = [
    "add_cluster",
    "change_cluster",
    "delete_cluster",
    "view_cluster",
    # managed on the cluster's admin page: per-group health overrides, and brokers to forget
    "add_healthoverride",
    "change_healthoverride",
    "delete_healthoverride",
    "view_healthoverride",
    "view_knownbroker",
    "delete_knownbroker",
]
# alert rules and channels are the admin's, in the Django admin (alerts, silences: read there)
ALERT_MODEL_PERMISSIONS = [
    "add_alertrule",
    "change_alertrule",
    "delete_alertrule",
    "view_alertrule",
    "add_channel",
    "change_channel",
    "delete_channel",
    "view_channel",
    "view_alert",
    "view_delivery",
    "view_silence",
]
# django-axes's admin pages: login failures and lockouts (deleting an access attempt unlocks)
AXES_MODEL_PERMISSIONS = [
    "view_accessattempt",
    "delete_accessattempt",
    "view_accessfailurelog",
    "view_accesslog",
]
# refused API tokens per (prefix, address): seen and unlocked (deleted) in the Django admin
TOKEN_FAILURE_PERMISSIONS = ["view_tokenfailure", "delete_tokenfailure"]
# who may see and do what (consumers/identity): grants managed, IdP accounts read, in the admin
GRANT_PERMISSIONS = ["add_grant", "change_grant", "delete_grant", "view_grant", "view_idpaccount"]
# The app of each permission that is not this app's own (codenames are unique across them).
PERMISSION_APP_LABELS = {codename: "axes" for codename in AXES_MODEL_PERMISSIONS}

ROLE_PERMISSIONS: dict[str, list[str]] = {
    "viewer": [VIEW],
    "operator": [VIEW, REQUEST],
    "approver": [VIEW, APPROVE],
    "admin": [
        VIEW,
        REQUEST,
        APPROVE,
        *CLUSTER_MODEL_PERMISSIONS,
        *ALERT_MODEL_PERMISSIONS,
        *AXES_MODEL_PERMISSIONS,
        *TOKEN_FAILURE_PERMISSIONS,
        *GRANT_PERMISSIONS,
    ],
}
ROLES = tuple(ROLE_PERMISSIONS)


def perm(codename: str) -> str:
    return f"{app_label_of(codename)}.{codename}"


def app_label_of(codename: str) -> str:
    return PERMISSION_APP_LABELS.get(codename, "consumers")


# Who may do what, URL by URL: the one table of the console's access rules (docs/security.md's roles
# table is printed from it, and tests/identity/test_access.py walks it over every URL and role).
# A rule names the permission needed; the roles holding it are in ROLE_PERMISSIONS. Views and
# services enforce these rules themselves; this table is what they are checked against.
STAFF = "staff"  # the Django admin: is_staff users (the admin role)


@dataclass(frozen=True)
class Rule:
    get: str | None = VIEW  # None: the method is not offered
    post: str | None = None
    sees: str = ""  # what differs by role on the page


BODY_RULE = "message bodies and searches by body: operator and admin only"
ACCESS: dict[str, Rule] = {
    "home": Rule(),
    "cluster-list": Rule(),
    "group-list": Rule(),
    "abandoned-groups": Rule(sees="only the groups the user's grants cover"),
    "group-detail": Rule(sees="reset button: operator and admin"),
    "group-lag-json": Rule(),
    "group-allocation-json": Rule(),
    "reset-form": Rule(),
    "reset-preview": Rule(),
    "reset-create": Rule(get=None, post=REQUEST),
    "skip-form": Rule(sees=BODY_RULE),
    "skip-create": Rule(get=None, post=REQUEST),
    "config-page": Rule(sees="the change, pause and resume forms: operator and admin"),
    "config-create": Rule(get=None, post=REQUEST),
    "mode-create": Rule(get=None, post=REQUEST),
    "group-delete": Rule(sees="the request form: operator and admin"),
    "group-delete-create": Rule(get=None, post=REQUEST),
    "group-clients": Rule(sees="capture stacks: operator and admin"),
    "client-detail": Rule(),
    "capture-stacks": Rule(get=None, post=REQUEST, sees="thread stacks (code paths, never message bodies)"),
    "capture-client-stacks": Rule(get=None, post=REQUEST, sees="one client's thread stacks, as capture-stacks"),
    "change-list": Rule(),
    "change-detail": Rule(sees="approve/reject: approvers other than the author; cancel: the author"),
    "change-action": Rule(
        get=None,
        post=APPROVE,
        sees="approve, reject: approver (never the author); cancel: the author; refresh, undo: operator",
    ),  # fmt: skip
    "audit-log": Rule(),
    "dlq-overview": Rule(),
    "dlq-group": Rule(sees=BODY_RULE),
    "dlq-message": Rule(sees=BODY_RULE),
    "dlq-export": Rule(get=REQUEST, sees="exports carry bodies"),
    "dlq-redrive": Rule(get=None, post=REQUEST),
    "dlq-make-readable": Rule(get=None, post=REQUEST),
    "dlq-job": Rule(),
    "dlq-job-came-back": Rule(),
    "dlq-job-action": Rule(get=None, post=REQUEST),
    "message-find": Rule(),
    "message-detail": Rule(sees=BODY_RULE),
    "message-track": Rule(),
    "message-verify": Rule(sees="the request form: operator and admin"),
    "message-verify-create": Rule(get=None, post=REQUEST),
    "stats": Rule(),
    "stats-jobs": Rule(),
    "stats-run": Rule(get=None, post=REQUEST),
    "stats-job-log": Rule(),
    "stats-cluster-charts": Rule(),
    "stats-group-charts": Rule(),
    "reports": Rule(),
    "report-create": Rule(get=None, post=VIEW),
    "report-now": Rule(),
    "report-row": Rule(),
    "report-download": Rule(),
    "alerts": Rule(sees="acknowledge, silence: operator and admin"),
    "alert-acknowledge": Rule(get=None, post=REQUEST),
    "silence-create": Rule(get=None, post=REQUEST),
    "silence-end": Rule(get=None, post=REQUEST),
    "metrics": Rule(sees="also without credentials from METRICS_ALLOWED_NETWORKS"),
    "tokens": Rule(sees="only the user's own tokens"),
    "token-create": Rule(get=None, post=VIEW),
    "token-revoke": Rule(get=None, post=VIEW, sees="only the user's own tokens"),
    # no user: the identity provider's server posts a logout token it signed (backchannel.py)
    "oidc-backchannel-logout": Rule(get=None, sees="no login: a logout token signed by the identity provider"),
    "api-clusters": Rule(),
    "api-groups": Rule(),
    "api-abandoned-groups": Rule(sees="only the groups the user's grants cover"),
    "api-group": Rule(),
    "api-group-config": Rule(),
    "api-group-clients": Rule(),
    "api-group-allocation": Rule(),
    "api-reset-preview": Rule(get=None, post=VIEW, sees="a read: nothing is requested"),
    "api-alerts": Rule(),
    "api-dlq-messages": Rule(sees=BODY_RULE),
    "api-dlq-redrive": Rule(get=None, post=REQUEST),
    "api-dlq-job": Rule(),
    "api-dlq-job-action": Rule(get=None, post=REQUEST),
    "api-message-find": Rule(),
    "api-message": Rule(sees=BODY_RULE),
    "api-message-track": Rule(),
    "api-changes": Rule(post=REQUEST),
    "api-change": Rule(),
    "api-change-action": Rule(get=None, post=APPROVE, sees="as change-action"),
}


def roles_with(permission: str | None) -> list[str]:
    if permission is None:
        return []
    if permission == STAFF:
        return ["admin"]
    return [role for role, perms in ROLE_PERMISSIONS.items() if permission in perms]


def access_markdown() -> str:
    """ACCESS as docs/security.md's table (a test keeps the two equal)."""
    lines = ["| URL name | GET | POST | what differs by role |", "|---|---|---|---|"]

    def who(permission: str | None) -> str:
        roles = roles_with(permission)
        return "every role" if len(roles) == len(ROLES) else ", ".join(roles) or "—"

    for name, rule in ACCESS.items():
        cells = [who(rule.get), who(rule.post)]
        lines.append(f"| `{name}` | {cells[0]} | {cells[1]} | {rule.sees} |")
    return "\n".join(lines)
