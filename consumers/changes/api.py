"""/api/changes/: change requests as JSON, with the same rules as the pages (the workflow
checks roles, four eyes, expiry and read-only clusters for both)."""

from __future__ import annotations

import json

from django.http import JsonResponse

from ..access import api_view, json_error, remote_addr
from ..models import Cluster
from ..rocketmq import RocketMQError
from . import selectors
from .forms import ChangeFilterForm
from .models import ChangeRequest
from .services import decide
from .workflow import Actor, ChangeRefused


def change_json(change: ChangeRequest, *, full: bool = False) -> dict:
    data = {
        "id": change.pk,
        "cluster": change.cluster.name,
        "group": change.group,
        "kind": change.kind,
        "state": change.state,
        "params": change.params,
        "reason": change.reason,
        "requested_by": change.requested_by.get_username(),
        "requested_at": change.requested_at.isoformat(),
        "expires_at": change.expires_at.isoformat(),
        "decided_by": change.decided_by.get_username() if change.decided_by else None,
        "decided_at": change.decided_at.isoformat() if change.decided_at else None,
        "decision_reason": change.decision_reason or None,
        "undo_of": change.undo_of_id,
    }
    if full:
        data.update(planned_at=change.planned_at.isoformat(), plan=change.plan, result=change.result)
        data["events"] = [
            {"at": e.at.isoformat(), "user": e.username, "action": e.action, "details": e.details}
            for e in change.events.all()
        ]
    return data


@api_view(methods=("GET", "POST"))
def changes(request):
    if request.method == "POST":
        return _create(request)
    form = ChangeFilterForm(request.GET)
    if not form.is_valid():
        return json_error(400, f"invalid filter: {form.errors.as_text()}", fields=form.errors.get_json_data())
    return JsonResponse({"changes": [change_json(c) for c in selectors.change_list(**form.cleaned_data)]})


def _create(request):
    from ..resets.services import request_reset
    from ..resets.strategies import InvalidReset

    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return json_error(400, "the body must be JSON")
    if not isinstance(body, dict) or body.get("kind", "reset") != "reset":
        return json_error(400, 'the body must be a JSON object; kind "reset" (redrives: not yet)')
    cluster = Cluster.objects.filter(name=body.get("cluster") or "").first()
    if cluster is None:
        return json_error(400, f"no cluster named {body.get('cluster')!r}")
    if not isinstance(body.get("group"), str) or not body["group"]:
        return json_error(400, "group is required")
    try:
        change = request_reset(
            actor=Actor(request.user, remote_addr(request)),
            cluster=cluster,
            group=body["group"],
            params=body.get("params") or {},
            reason=body.get("reason") or "",
        )
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except InvalidReset as exc:
        return json_error(400, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse(change_json(change, full=True), status=201)


@api_view
def change(request, pk: int):
    found = selectors.change_detail(pk)
    if found is None:
        return json_error(404, f"no change request #{pk}")
    return JsonResponse(change_json(found, full=True))


@api_view(methods=("POST",))
def change_action(request, pk: int, action: str):
    found = selectors.change_detail(pk)
    if found is None:
        return json_error(404, f"no change request #{pk}")
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return json_error(400, "the body must be JSON")
    try:
        result = decide(found, action, actor=Actor(request.user, remote_addr(request)), reason=body.get("reason") or "")
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse(change_json(selectors.change_detail(result.pk), full=True))
