"""What the reset pages, API and tasks call: preview, request, refresh, undo, and what moved
on the broker since a request's preview."""

from __future__ import annotations

from django.conf import settings

from ..changes import notify, workflow
from ..changes.models import ChangeRequest, State
from ..clusters.connect import run_on_cluster
from ..core import Actor, ChangeRefused, require_reason, require_role, require_writable
from ..models import Cluster
from ..roles import REQUEST
from .preview import read_preview


def preview(cluster: Cluster, group: str, params: dict) -> dict:
    """The plan of a reset as the broker stands now. Raises InvalidReset for bad input."""
    return run_on_cluster(cluster, lambda c: read_preview(c, group, params), seconds=settings.RESET_PREVIEW_DEADLINE)


def request_reset(*, actor: Actor, cluster: Cluster, group: str, params: dict, reason: str, undo_of=None):
    # refused before the broker is read: no role, a read-only cluster, no reason
    require_role(actor, REQUEST, "requesting a reset", "operator")
    require_writable(cluster)
    require_reason(reason)
    plan = preview(cluster, group, params)
    request = workflow.submit(
        actor=actor,
        cluster=cluster,
        group=group,
        kind=ChangeRequest.Kind.RESET,
        params=plan["params"],
        plan=plan,
        reason=reason,
        undo_of=undo_of,
    )
    notify.new_request(request)
    return request


def refresh_preview(request: ChangeRequest, *, actor: Actor) -> ChangeRequest:
    return workflow.replan(request, actor=actor, plan=preview(request.cluster, request.group, request.params))


def undo(request: ChangeRequest, *, actor: Actor, reason: str) -> ChangeRequest:
    """A new request, through the same approval, that puts back the offsets this one replaced."""
    if request.kind != ChangeRequest.Kind.RESET or request.state not in (State.DONE, State.PARTIAL):
        raise ChangeRefused("only an executed reset can be undone", 409)
    replaced = {label: offset for label, offset in request.result.get("replaced", {}).items() if offset is not None}
    applied = request.result.get("applied", {})
    offsets = {label: offset for label, offset in replaced.items() if label in applied}
    if not offsets:
        raise ChangeRefused("this reset changed no queue that had a committed offset: nothing to undo", 409)
    params = {
        "strategy": "exact",
        "offsets": offsets,
        "topics": sorted({label.split("@")[0] for label in offsets}),
        "include_retry": bool(request.params.get("include_retry")),
    }
    return request_reset(
        actor=actor, cluster=request.cluster, group=request.group, params=params, reason=reason, undo_of=request
    )


def moved_since(request: ChangeRequest) -> list[dict]:
    """Per queue of a pending request: new messages and committed offsets that advanced since
    its preview (what the approver should know before approving)."""
    now = preview(request.cluster, request.group, {**request.params, "strategy": "earliest"})
    fresh = {r["label"]: r for r in now["rows"]}
    moved = []
    for row in request.plan["rows"]:
        current = fresh.get(row["label"])
        if current is None:
            moved.append({"label": row["label"], "note": "no longer there"})
            continue
        new_messages = current["max"] - row["max"]
        advanced = (current["current"] or 0) - (row["current"] or 0) if current["current"] is not None else None
        if new_messages or advanced:
            moved.append({"label": row["label"], "new_messages": new_messages, "committed_advanced": advanced})
    return moved
