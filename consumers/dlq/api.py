"""/api/dlq/: browsing and redrive jobs as JSON, with the pages' permissions (metadata for every
role; redrives for operators)."""

from __future__ import annotations

import json

from django.http import JsonResponse

from ..access import api_view, json_error, remote_addr
from ..changes.workflow import Actor, ChangeRefused
from ..models import Cluster
from ..rocketmq import RocketMQError
from ..roles import REQUEST, perm
from . import redrive, selectors
from .browse import Selection
from .forms import DlqFilterForm, encode_cursor
from .models import RedriveJob


def job_json(job: RedriveJob) -> dict:
    return {
        "id": job.pk, "cluster": job.cluster.name, "group": job.group, "state": job.state,
        "target": job.target, "target_topic": job.target_topic or None, "rate": job.rate,
        "selection": job.selection, "checkpoints": job.checkpoints, "failures": job.failures,
        "change_request": job.change_request_id, **redrive.progress(job),
    }  # fmt: skip


@api_view
def messages(request, cluster: str, group: str):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return json_error(404, f"no cluster named {cluster!r}")
    form = DlqFilterForm(request.GET)
    if not form.is_valid():
        return json_error(400, f"invalid filter: {form.errors.as_text()}")
    try:
        queues, page, _ = selectors.page(found, group, form.selection(), form.cleaned_data["cursor"])
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    return JsonResponse({
        "total": sum(q.count for q in queues), "messages": page.rows, "scanned": page.scanned,
        "next_cursor": encode_cursor(page.cursor) if page.more else None,
    })  # fmt: skip


@api_view(methods=("POST",))
def start(request, cluster: str, group: str):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return json_error(404, f"no cluster named {cluster!r}")
    try:
        body = json.loads(request.body or b"{}")
        selection = Selection.from_wire(body.get("selection") or {})
        rate = int(body.get("rate", 0))
    except (ValueError, TypeError) as exc:
        return json_error(400, f"the body must be JSON with target, rate and an optional selection: {exc}")
    try:
        job = redrive.plan_redrive(
            actor=Actor(request.user, remote_addr(request)), cluster=found, group=group, selection=selection,
            target=body.get("target", ""), target_topic=body.get("target_topic") or "", rate=rate,
            reason=body.get("reason") or "",
        )  # fmt: skip
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    except RocketMQError as exc:
        return json_error(502, f"the broker could not be read: {exc}")
    if job.state == RedriveJob.State.QUEUED:
        redrive.start(job)
    return JsonResponse(job_json(job), status=201)


@api_view
def job(request, pk: int):
    found = selectors.job(pk)
    return JsonResponse(job_json(found)) if found else json_error(404, f"no redrive job #{pk}")


@api_view(methods=("POST",))
def job_action(request, pk: int, action: str):
    found = selectors.job(pk)
    if found is None:
        return json_error(404, f"no redrive job #{pk}")
    if not request.user.has_perm(perm(REQUEST)):
        return json_error(403, "controlling a redrive needs the operator role")
    controls = {"pause": redrive.pause, "resume": redrive.resume, "cancel": redrive.cancel}
    if action not in controls:
        return json_error(400, f"unknown action {action!r}; one of pause, resume, cancel")
    try:
        changed = controls[action](found, actor=Actor(request.user, remote_addr(request)))
    except ChangeRefused as exc:
        return json_error(exc.status, str(exc))
    return JsonResponse(job_json(changed))
