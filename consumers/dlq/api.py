"""/api/dlq/: browsing and redrive jobs as JSON, with the pages' permissions (metadata for every
role; redrives for operators)."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse

from ..changes.guards import Actor, ChangeRefused
from ..identity import REQUEST, api_view, hide_bodies, may_read_bodies, remote_addr, scope_of, visible_cluster
from ..jobs import claims
from ..rocketmq import RocketMQError
from ..web.apischema import Bool, Choice, Int, List, Moment, Obj, Str
from ..web.errors import json_error
from ..web.inputs import encode_cursor
from . import redrive, selectors
from .browse import Selection
from .forms import DlqFilterForm
from .models import RedriveJob

SELECTION = Obj({
    # as the filter form's (forms.DlqFilterForm): a start not after now, an end up to a day ahead
    "since_ms": Moment(nullable=True, past_only=True), "until_ms": Moment(nullable=True),
    "key": Str(), "tag": Str(), "msg_id": Str(max_length=128), "original_topic": Str(), "body": Str(strip=False),
    "ids": List(Str(max_length=128, required=True), max_items=10_000),
    "job": Int(1, 2**31 - 1, nullable=True),
})  # fmt: skip
REDRIVE = Obj({
    "target": Choice(tuple(RedriveJob.Target.values)), "target_topic": Str(),
    "rate": Int(1, settings.REDRIVE_MAX_RATE), "reason": Str(max_length=2000), "selection": SELECTION,
    "accept_unreadable": Bool(), "ask_approver": Bool(),
}, required=("target",))  # fmt: skip


def job_json(job: RedriveJob, user) -> dict:
    return {
        **redrive.progress(job), "id": job.pk, "cluster": job.cluster.name, "group": job.group,
        "state": job.state, "shown_state": job.shown_state, "heartbeat_age_seconds": claims.heartbeat_age(job),
        "silent_seconds": claims.silent_for(job) if job.state == RedriveJob.State.RUNNING else None,
        "target": job.target, "target_topic": job.target_topic or None, "rate": job.rate,
        "selection": hide_bodies(user, job.selection), "checkpoints": job.checkpoints, "failures": job.failures,
        "change_request": job.change_request_id,
        "recovered": job.recovered, "untouched": job.untouched,
    }  # fmt: skip


@api_view
def messages(request, cluster: str, group: str):
    found = visible_cluster(request, cluster, group)
    if found is None:
        return json_error(404, f"no group {group!r} in a cluster named {cluster!r}")
    operator = may_read_bodies(request.user, found.name, group=group)
    form = DlqFilterForm(request.GET, can_read_bodies=operator, strict=True)
    if not form.is_valid():
        return json_error(400, f"invalid filter: {form.error_text()}", fields=form.errors.get_json_data())
    selection, cursor = form.selection(), form.cleaned_data["cursor"]
    try:
        queues, page, _ = selectors.page(found, group, selection, cursor)
        counted = selectors.matching(found, group, selection, queues, page, first_page=cursor is None)
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse({
        # total: the filter's matches; null when counting them would read more than the limit
        "total": None if counted.unscanned else counted.count, "total_at_least": counted.count,
        "total_unread": counted.unscanned, "dlq_total": sum(q.count for q in queues),
        "messages": page.rows, "scanned": page.scanned,
        "next_cursor": encode_cursor(page.cursor) if page.more else None,
    })  # fmt: skip


@api_view(methods=("POST",), body=REDRIVE)
def start(request, cluster: str, group: str):
    found = visible_cluster(request, cluster, group)
    if found is None:
        return json_error(404, f"no group {group!r} in a cluster named {cluster!r}")
    body = request.json
    try:
        job = redrive.plan_redrive(
            actor=Actor(request.user, remote_addr(request)), cluster=found, group=group,
            selection=Selection.from_wire(body.get("selection", {})), target=body["target"],
            target_topic=body.get("target_topic", ""), rate=body.get("rate", settings.REDRIVE_DEFAULT_RATE),
            reason=body.get("reason", ""), accept_unreadable=body.get("accept_unreadable", False),
            ask_approver=body.get("ask_approver", False),
        )  # fmt: skip
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    if job.state == RedriveJob.State.QUEUED:
        redrive.start(job)
    return JsonResponse(job_json(job, request.user), status=201)


@api_view
def job(request, pk: int):
    found = _visible_job(request, pk)
    return JsonResponse(job_json(found, request.user)) if found else json_error(404, f"no redrive job #{pk}")


@api_view(methods=("POST",))
def job_action(request, pk: int, action: str):
    found = _visible_job(request, pk)
    if found is None:
        return json_error(404, f"no redrive job #{pk}")
    if not scope_of(request.user).may(REQUEST, found.cluster.name, found.group):
        return json_error(403, "controlling a redrive needs the operator role")
    controls = {"pause": redrive.pause, "resume": redrive.resume, "cancel": redrive.cancel}
    if action not in controls:
        return json_error(400, f"unknown action {action!r}; one of pause, resume, cancel")
    try:
        changed = controls[action](found, actor=Actor(request.user, remote_addr(request)))
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    return JsonResponse(job_json(changed, request.user))


def _visible_job(request, pk: int) -> RedriveJob | None:
    found = selectors.job(pk)
    if found is None or not scope_of(request.user).sees_group(found.cluster.name, found.group):
        return None
    return found
