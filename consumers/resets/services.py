"""What the reset pages, API and tasks call: preview, request, refresh, undo, and what moved
on the broker since a request's preview."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from ..changes import notify, workflow
from ..changes.guards import Actor, ChangeRefused, require_reason, require_role, require_writable
from ..changes.models import ChangeRequest, State
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST, VIEW
from ..models import Cluster
from ..rocketmq import RocketMQError
from . import effect
from .defects import UNDO_NOTE
from .preview import read_preview


def preview(cluster: Cluster, group: str, params: dict) -> dict:
    """The plan of a reset as the broker stands now, with every known broker it could not read
    (failing, or missing from the name server) named: its queues stay as they are, and the
    approver must say so (see workflow.approve). Raises InvalidReset for bad input."""
    plan = run_on_cluster(
        cluster,
        lambda c: read_preview(c, group, params, proxies=cluster.proxy_list),
        seconds=settings.RESET_PREVIEW_DEADLINE,
    )
    plan["unreadable"] = _unreadable(cluster, group, plan)
    return plan


def _unreadable(cluster: Cluster, group: str, plan: dict) -> list[dict]:
    """Brokers holding (as far as the console knows) queues of this reset that the read did not
    reach, with the queues the last poll saw there."""
    from ..jobs.redis_client import get_redis
    from ..live import selectors
    from ..models import KnownBroker

    topics = {row["topic"] for row in plan["rows"]}
    found = {entry["broker"]: dict(entry, since=None, queues=[]) for entry in plan["unreadable"].values()}
    listed = plan.get("brokers_listed", plan["brokers_read"])  # plans made before 2026-11 have only the latter
    for known in KnownBroker.objects.filter(cluster=cluster).exclude(name__in=listed):
        since = known.missing_since.isoformat() if known.missing_since else None
        found.setdefault(known.name, {"broker": known.name, "reason": "missing from the name server", "topics": []})
        found[known.name]["since"] = since
    if not found:
        return []
    view = selectors.group_detail(get_redis(), cluster, group)
    last_seen = [q for q in (view.doc.queues if view else []) if q.topic in topics]
    for entry in found.values():
        entry["queues"] = sorted(f"{q.topic}@{q.broker}#{q.queue_id}" for q in last_seen if q.broker == entry["broker"])
        entry.setdefault("since", None)
    # a missing broker the last poll saw none of this group's queues on is no part of the reset;
    # with no poll of the group at all, every unreadable broker counts (unknown is not none)
    return [e for e in found.values() if e["queues"] or e["topics"] or view is None]


def request_reset(*, actor: Actor, cluster: Cluster, group: str, params: dict, reason: str, undo_of=None):
    # refused before the broker is read: no role, a read-only cluster, no reason
    require_role(actor, REQUEST, _("requesting a reset"), "operator", cluster=cluster, group=group)
    if params.get("source_group"):  # a copy reads the source group: it must be one the actor sees
        require_role(actor, VIEW, _("copying offsets"), "viewer", cluster=cluster, group=params["source_group"])
    require_writable(cluster)
    require_reason(reason)
    plan = preview(cluster, group, params)
    if undo_of is not None and plan.get("pop"):
        plan["warnings"] = [*plan.get("warnings", []), UNDO_NOTE]  # in English, as the plan's others
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
    # what a reset's run records (a message skip runs as one): the offsets it replaced
    if "replaced" not in request.result or request.state not in (State.DONE, State.PARTIAL):
        raise ChangeRefused(_("only an executed reset can be undone"), 409)
    replaced = {label: offset for label, offset in request.result.get("replaced", {}).items() if offset is not None}
    applied = request.result.get("applied", {})
    offsets = {label: offset for label, offset in replaced.items() if label in applied}
    if not offsets:
        raise ChangeRefused(_("this reset changed no queue that had a committed offset: nothing to undo"), 409)
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
            moved.append({"label": row["label"], "note": _("no longer there")})
            continue
        new_messages = current["max"] - row["max"]
        advanced = (current["current"] or 0) - (row["current"] or 0) if current["current"] is not None else None
        if new_messages or advanced:
            moved.append({"label": row["label"], "new_messages": new_messages, "committed_advanced": advanced})
    return moved


def effect_changed(request: ChangeRequest) -> str | None:
    """The plan's effect read again from the broker (committed and max offsets): None while it is
    within the tolerance of what the preview showed, else the refusal in words."""
    rows = [r for r in request.plan["rows"] if r["target"] is not None]
    if not rows:
        return None
    try:
        committed, maxes = run_on_cluster(
            request.cluster, lambda c: effect.read_now(c, request.group, rows), seconds=settings.RESET_PREVIEW_DEADLINE
        )
    except RocketMQError as exc:
        return _("the effect could not be read again (%(error)s); refresh the preview") % {"error": exc}
    now = effect.recomputed(rows, request.params.get("strategy"), committed, maxes)
    return effect.change(effect.planned(rows), now)
