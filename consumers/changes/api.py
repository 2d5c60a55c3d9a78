"""/api/changes/: change requests as JSON, with the same rules as the pages (the workflow
checks roles, four eyes, expiry and read-only clusters for both)."""

from __future__ import annotations

from django.http import JsonResponse

from ..identity import APPROVE, api_view, hide_bodies, remote_addr, scope_of, within
from ..models import Cluster
from ..rocketmq import RocketMQError
from ..web.apischema import AnyObject, Bool, Obj, SchemaError, Str
from ..web.errors import json_error
from . import kinds, selectors
from .forms import ChangeFilterForm
from .guards import Actor, ChangeRefused
from .models import ChangeRequest, State
from .services import decide
from .workflow import touched_groups


def change_json(change: ChangeRequest, user, *, full: bool = False) -> dict:
    data = {
        "id": change.pk,
        "cluster": change.cluster.name,
        "group": change.group,
        "kind": change.kind,
        "state": change.state,
        "params": hide_bodies(user, change.params),
        "reason": change.reason,
        "requested_by": change.requested_by.get_username(),
        "requested_at": change.requested_at.isoformat(),
        "expires_at": change.expires_at.isoformat(),
        "decided_by": change.decided_by.get_username() if change.decided_by else None,
        # who approved which groups, when the request touches more than one team's
        "approvals": [{k: a[k] for k in ("by", "groups", "at")} for a in change.approvals],
        "decided_at": change.decided_at.isoformat() if change.decided_at else None,
        "decision_reason": change.decision_reason or None,
        "undo_of": change.undo_of_id,
    }
    if full:
        data.update(planned_at=change.planned_at.isoformat(), plan=hide_bodies(user, change.plan), result=change.result)
        data["events"] = [
            {"at": e.at.isoformat(), "user": e.username, "action": e.action, "details": hide_bodies(user, e.details)}
            for e in change.events.all()
        ]
    return data


# the envelope; "params" is checked by the schema of the request's kind (kinds.ChangeKind.api_params)
CREATE = Obj(
    {
        "kind": Str(max_length=32),
        "cluster": Str(max_length=64, required=True),
        "group": Str(max_length=255, required=True),
        "params": AnyObject(),
        "reason": Str(max_length=2000),
    },
    required=("cluster", "group", "params"),
)
DECISION = Obj({"reason": Str(max_length=2000), "accept_unreadable": Bool()})


@api_view(methods=("GET", "POST"), body=CREATE)
def changes(request):
    if request.method == "POST":
        return _create(request)
    form = ChangeFilterForm(request.GET)
    if not form.is_valid():
        return json_error(400, f"invalid filter: {form.errors.as_text()}", fields=form.errors.get_json_data())
    return JsonResponse(
        {
            "changes": [
                change_json(c, request.user)
                for c in selectors.change_list(**form.cleaned_data, within=within(request.user))
            ]
        }
    )


def _create(request):
    body = request.json
    offered = kinds.creatable()
    # without "kind", the kind registered as the API's default (resets: scripts written before
    # there was a second kind send none)
    name = body.get("kind") or next((n for n, k in offered.items() if k.api_default), "")
    if name not in offered:
        return json_error(400, f"body.kind: must be one of {', '.join(offered)}", field="body.kind")
    kind = offered[name]
    try:
        params = kind.api_params.clean(body["params"], "body.params")
    except SchemaError as exc:
        return json_error(400, str(exc), field=exc.field)
    cluster = Cluster.objects.filter(name=body["cluster"]).first()
    if cluster is None or not scope_of(request.user).sees_cluster(cluster.name):
        return json_error(400, f"no cluster named {body['cluster']!r}", field="body.cluster")
    try:
        change = kind.api_create(actor=Actor(request.user, remote_addr(request)), cluster=cluster,
                                 group=body["group"], params=params, reason=body.get("reason", ""))  # fmt: skip
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse(change_json(change, request.user, full=True), status=201)


@api_view
def change(request, pk: int):
    found = selectors.visible_change(pk, scope_of(request.user))
    if found is None:
        return json_error(404, f"no change request #{pk}")
    data = change_json(found, request.user, full=True)
    # what an approver sees on the page before deciding: what moved on the broker since the plan
    moved_since = kinds.of(found).moved_since
    if (
        found.state == State.PENDING
        and any(scope_of(request.user).may(APPROVE, found.cluster.name, g) for g in touched_groups(found))
        and moved_since
    ):
        try:
            data["moved_since_preview"] = moved_since(found)
        except RocketMQError as exc:
            data["moved_since_preview"] = None
            data["moved_since_preview_error"] = f"the broker could not be read: {exc}"
    return JsonResponse(data)


@api_view(methods=("POST",), body=DECISION)
def change_action(request, pk: int, action: str):
    found = selectors.visible_change(pk, scope_of(request.user))
    if found is None:
        return json_error(404, f"no change request #{pk}")
    try:
        result = decide(found, action, actor=Actor(request.user, remote_addr(request)),
                        reason=request.json.get("reason", ""),
                        accept_unreadable=request.json.get("accept_unreadable", False))  # fmt: skip
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse(
        change_json(selectors.visible_change(result.pk, scope_of(request.user)), request.user, full=True)
    )
