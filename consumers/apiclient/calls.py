"""The calls the MCP server and the command line make, each one API request returning the API's
JSON unchanged. Writes only propose: each creates a pending change request (POST /api/changes/)
that a person approves; there is no call here that approves, runs, cancels or undoes one."""

from __future__ import annotations

from .http import Connection, segment


def _group_path(cluster: str, group: str) -> str:
    return f"/api/groups/{segment(cluster)}/{segment(group)}/"


def clusters(api: Connection) -> dict:
    return api.get("/api/clusters/")


def groups(api: Connection, **filters) -> dict:
    """filters: cluster, health, topic, q, sort, limit, cursor (the Groups page's)."""
    return api.get("/api/groups/", filters)


def abandoned(api: Connection, *, days: int | None = None, cluster: str = "") -> dict:
    return api.get("/api/groups/abandoned/", {"days": days, "cluster": cluster})


def group(api: Connection, cluster: str, group: str) -> dict:
    return api.get(_group_path(cluster, group))


def allocation(api: Connection, cluster: str, group: str, *, hours: int | None = None) -> dict:
    return api.get(_group_path(cluster, group) + "allocation/", {"hours": hours})


def group_clients(api: Connection, cluster: str, group: str) -> dict:
    return api.get(_group_path(cluster, group) + "clients/")


def group_config(api: Connection, cluster: str, group: str) -> dict:
    return api.get(_group_path(cluster, group) + "config/")


def find_messages(api: Connection, **query) -> dict:
    """query: cluster, by (id, key, offset, time) and what that needs (the Messages page's)."""
    return api.get("/api/messages/", query)


def _message_path(cluster: str, topic: str, broker: str, queue_id: int, offset: int) -> str:
    parts = (cluster, topic, broker, queue_id, offset)
    return "/api/messages/" + "".join(f"{segment(p)}/" for p in parts)


def message(api: Connection, cluster: str, topic: str, broker: str, queue_id: int, offset: int) -> dict:
    return api.get(_message_path(cluster, topic, broker, queue_id, offset))


def track(api: Connection, cluster: str, topic: str, broker: str, queue_id: int, offset: int) -> dict:
    return api.get(_message_path(cluster, topic, broker, queue_id, offset) + "track/")


def dlq_messages(api: Connection, cluster: str, group: str, **filters) -> dict:
    return api.get(f"/api/dlq/{segment(cluster)}/{segment(group)}/messages/", filters)


def alerts(api: Connection, *, state: str = "") -> dict:
    return api.get("/api/alerts/", {"state": state})


def reset_preview(api: Connection, cluster: str, group: str, params: dict) -> dict:
    return api.post(_group_path(cluster, group) + "reset/preview/", params)


def changes(api: Connection, **filters) -> dict:
    return api.get("/api/changes/", filters)


def change(api: Connection, change_id: int) -> dict:
    return api.get(f"/api/changes/{int(change_id)}/")


def propose(api: Connection, kind: str, cluster: str, group: str, params: dict, reason: str) -> dict:
    """A pending change request of `kind` (reset, skip, config), for a person to approve."""
    body = {"kind": kind, "cluster": cluster, "group": group, "params": params, "reason": reason}
    return api.post("/api/changes/", body)


def propose_redrive(api: Connection, cluster: str, group: str, body: dict) -> dict:
    """A redrive is planned as a pending change request, as the DLQ page's button does."""
    return api.post(f"/api/dlq/{segment(cluster)}/{segment(group)}/redrive/", body)
