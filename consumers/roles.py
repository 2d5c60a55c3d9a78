"""Roles are Django groups with a fixed set of permissions (created by a migration).

viewer reads everything; operator may also request resets and redrives; approver may approve
them (someone else's: a request is never approved by its author); admin may do all of it and
manage clusters.
"""

from __future__ import annotations

VIEW = "view_console"
REQUEST = "request_change"
APPROVE = "approve_change"
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

ROLE_PERMISSIONS: dict[str, list[str]] = {
    "viewer": [VIEW],
    "operator": [VIEW, REQUEST],
    "approver": [VIEW, APPROVE],
    "admin": [VIEW, REQUEST, APPROVE, *CLUSTER_MODEL_PERMISSIONS],
}
ROLES = tuple(ROLE_PERMISSIONS)


def perm(codename: str) -> str:
    return f"consumers.{codename}"


def roles_of(user) -> list[str]:
    if not user.is_authenticated:
        return []
    names = set(user.groups.values_list("name", flat=True))
    return [role for role in ROLES if role in names]
