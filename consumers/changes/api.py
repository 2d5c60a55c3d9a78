"""/api/changes/: change requests as JSON, with the same rules as the pages (the workflow
checks roles, four eyes, expiry and read-only clusters for both)."""

from __future__ import annotations

from django.http import JsonResponse

from ..access import api_view, json_error, remote_addr
from ..apischema import JAVA_LONG_MAX, Bool, Choice, Int, List, Map, Obj, Str
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


def _reset_params() -> Obj:
    from ..resets.strategies import STRATEGIES

    return Obj(
        {
            "strategy": Choice(tuple(STRATEGIES)),
            "topics": List(Str(max_length=255, required=True), max_items=1000),
            "include_retry": Bool(),
            "timestamp_ms": Int(0, JAVA_LONG_MAX),
            "shift": Int(-JAVA_LONG_MAX, JAVA_LONG_MAX),
            "source_group": Str(max_length=255),
            "offsets": Map(Int(0, JAVA_LONG_MAX)),
        },
        required=("strategy",),
    )


CREATE = Obj(
    {
        "kind": Choice(("reset",)),
        "cluster": Str(max_length=64, required=True),
        "group": Str(max_length=255, required=True),
        "params": _reset_params(),
        "reason": Str(max_length=2000),
    },
    required=("cluster", "group", "params"),
)
DECISION = Obj({"reason": Str(max_length=2000)})


@api_view(methods=("GET", "POST"), body=CREATE)
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

    body = request.json
    cluster = Cluster.objects.filter(name=body["cluster"]).first()
    if cluster is None:
        return json_error(400, f"no cluster named {body['cluster']!r}", field="body.cluster")
    try:
        change = request_reset(
            actor=Actor(request.user, remote_addr(request)),
            cluster=cluster,
            group=body["group"],
            params=body["params"],
            reason=body.get("reason", ""),
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


@api_view(methods=("POST",), body=DECISION)
def change_action(request, pk: int, action: str):
    found = selectors.change_detail(pk)
    if found is None:
        return json_error(404, f"no change request #{pk}")
    try:
        result = decide(
            found, action, actor=Actor(request.user, remote_addr(request)), reason=request.json.get("reason", "")
        )
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse(change_json(selectors.change_detail(result.pk), full=True))
