"""DLQ pages: overview, a group's DLQ (filters, pages, redrive status, the redrive form),
one message, exports, and the redrive job page with its progress.

Bodies are the sensitive part of a dead letter (payments, personal data): every role sees the
metadata (ids, keys, tags, times, sizes), but bodies, exports and redrives need the operator
role."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from .. import audit
from ..changes.guards import Actor, ChangeRefused
from ..clusters.connect import ReadOnlyCluster, run_on_cluster
from ..identity import (
    REQUEST,
    cluster_or_404,
    console_action,
    console_page,
    hide_bodies,
    may_read_bodies,
    remote_addr,
    scope_of,
    visible_clusters,
)
from ..jobs import claims
from ..jobs.redis_client import get_redis
from ..rocketmq import RocketMQError
from ..rocketmq.codes import dlq_topic
from ..web.csvstream import BOM, attachment, base64_cell, csv_writer
from ..web.errors import bad_request
from ..web.inputs import encode_cursor
from . import redrive, selectors
from .browse import MessageNotFound, Selection, body_views, dlq_queues, export_record, row, scan
from .forms import DlqFilterForm, RedriveForm
from .models import RedriveJob


def _operator(request, cluster: str, group: str) -> None:
    """Bodies, exports and redrives of a group's dead letters: the operator role on that group
    (a group the user cannot see at all is not found: cluster_or_404 first)."""
    cluster_or_404(request, cluster, group)
    if not may_read_bodies(request.user, cluster, group=group):
        raise PermissionDenied(_("message bodies, exports and redrives need the operator role"))


@console_page
def overview(request):
    try:
        groups = selectors.overview(get_redis(), visible_clusters(request), scope_of(request.user))
    except RocketMQError as exc:
        return render(request, "dlq/overview.html", {"error": str(exc), "groups": [], "nav": "dlq"}, status=502)
    return render(request, "dlq/overview.html", {"groups": groups, "nav": "dlq"})


@console_page
def group_dlq(request, cluster: str, group: str):
    cluster = cluster_or_404(request, cluster, group)
    operator = may_read_bodies(request.user, cluster.name, group=group)
    form = DlqFilterForm(request.GET, can_read_bodies=operator)
    if not form.is_valid():
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.errors.as_text()})
    try:
        queues, page, status = selectors.page(cluster, group, form.selection(), form.cleaned_data["cursor"])
    except RocketMQError as exc:
        return render(request, "dlq/group.html", {"cluster": cluster, "group": group, "error": str(exc)}, status=502)
    query = request.GET.copy()
    query["cursor"] = encode_cursor(page.cursor)
    filters = request.GET.copy()
    filters.pop("cursor", None)
    context = {
        "cluster": cluster, "group": group, "queues": queues, "page": page, "status": status, "form": form,
        "next_query": query.urlencode(), "filters": filters.urlencode(), "total": sum(q.count for q in queues),
        "write_only": any(not q.readable for q in queues),
        "jobs": selectors.jobs_of(cluster, group), "redrive_form": RedriveForm(), "nav": "dlq",
        "can_operate": operator,
    }  # fmt: skip
    return render(request, "dlq/group.html", context)


@console_page
def message(request, cluster: str, group: str, broker: str, queue_id: int, offset: int):
    cluster = cluster_or_404(request, cluster, group)
    try:
        found = selectors.message(cluster, group, broker, queue_id, offset)
    except MessageNotFound as exc:
        raise Http404(str(exc)) from None
    except RocketMQError as exc:
        return render(request, "dlq/group.html", {"cluster": cluster, "group": group, "error": str(exc)}, status=502)
    operator = may_read_bodies(request.user, cluster.name, group=group)
    context = {
        "cluster": cluster, "group": group, "m": row(found, broker), "properties": sorted(found.properties.items()),
        "body": body_views(found) if operator else None, "status": selectors.redrive_status(
            cluster, group, [(broker, queue_id, offset)]).get(f"{broker}#{queue_id}:{offset}", []), "nav": "dlq",
    }  # fmt: skip
    return render(request, "dlq/message.html", context)


@console_page
def export(request, cluster: str, group: str, fmt: str):
    if fmt not in ("jsonl", "csv"):
        raise Http404(_("exports are .jsonl or .csv"))
    _operator(request, cluster, group)
    cluster = cluster_or_404(request, cluster, group)
    form = DlqFilterForm(request.GET, can_read_bodies=True)
    if not form.is_valid():
        return bad_request(request, _("Invalid filter: %(errors)s") % {"errors": form.errors.as_text()})
    selection = form.selection()
    audit.record("dlq-export", username=request.user.get_username(), remote_addr=remote_addr(request),
                 cluster=cluster.name, group=group,
                 details={"format": fmt, "selection": selection.to_wire()})  # fmt: skip
    lines = _export_lines(cluster, group, selection, fmt)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson" if fmt == "jsonl" else "text/csv")
    # the filter is typed by the user (CR/LF, quotes, any script): attachment() makes it a safe header
    response["Content-Disposition"] = attachment(f"dlq-{group}-{selection.describe()}"[:180] + f".{fmt}")
    return response


CSV_COLUMNS = ["broker", "queue_id", "offset", "msg_id", "original_msg_id", "original_topic", "tags", "keys",
               "store_ms", "reconsume_times", "body_size", "properties", "body_base64"]  # fmt: skip


def _export_lines(cluster, group, selection, fmt):
    """Streamed window by window: one broker read per window, never the whole DLQ in memory."""
    writer = csv_writer()
    if fmt == "csv":
        yield BOM + writer.writerow(CSV_COLUMNS)
    queues = run_on_cluster(cluster, lambda c: dlq_queues(c, group))
    for q in queues:
        for begin in range(q.min, q.max, 256):
            window = type(q)(q.broker, q.queue_id, begin, min(q.max, begin + 256), q.readable)
            records = run_on_cluster(cluster, lambda c, w=window: _records(c, group, selection, w))
            for record in records:
                if fmt == "jsonl":
                    yield json.dumps(record, ensure_ascii=False) + "\n"
                else:
                    yield writer.writerow(csv_row(record))  # formula-safe: keys, tags, topics come from clients


def csv_row(record: dict) -> list:
    """One export record (browse.export_record) as the cells of a CSV row, in CSV_COLUMNS order."""
    values = {**record, "keys": " ".join(record["keys"]), "properties": json.dumps(record["properties"])}
    values["body_base64"] = base64_cell(record["body_base64"])  # kept exact for decoders: csvstream.Base64Text
    return [values[c] for c in CSV_COLUMNS]


async def _records(client, group, selection, window):
    return [export_record(m, q.broker) async for q, m in scan(client, group, selection, [window])]


@console_action
def make_readable(request, cluster: str, group: str):
    _operator(request, cluster, group)
    cluster = cluster_or_404(request, cluster, group)
    try:
        changed = run_on_cluster(cluster, lambda c: c.actions.make_topic_readable(dlq_topic(group)), mutation=True)
    except (RocketMQError, ReadOnlyCluster) as exc:
        flash.error(request, _("could not make it readable: %(error)s") % {"error": exc})
        return redirect("consumers:dlq-group", cluster.name, group)
    audit.record("dlq-make-readable", username=request.user.get_username(), remote_addr=remote_addr(request),
                 cluster=cluster.name, group=group, details={"brokers": changed})  # fmt: skip
    brokers = ", ".join(changed) or _("every broker (it was)")
    flash.success(request, _("%(dlq)s is readable now on %(brokers)s") % {"dlq": dlq_topic(group), "brokers": brokers})
    return redirect("consumers:dlq-group", cluster.name, group)


@console_action
def start_redrive(request, cluster: str, group: str):
    _operator(request, cluster, group)
    cluster = cluster_or_404(request, cluster, group)
    filters, form = (
        DlqFilterForm(request.POST, can_read_bodies=True),
        RedriveForm(request.POST),
    )
    if not (filters.is_valid() and form.is_valid()):
        errors = f"{filters.errors.as_text()} {form.errors.as_text()}"
        return bad_request(request, _("Invalid redrive: %(errors)s") % {"errors": errors})
    data = form.cleaned_data
    try:
        job = redrive.plan_redrive(
            actor=Actor(request.user, remote_addr(request)), cluster=cluster, group=group,
            selection=filters.selection(ids=data["ids"].splitlines()), target=data["target"],
            target_topic=data["target_topic"], rate=data["rate"], reason=data["reason"],
            accept_unreadable=data["accept_unreadable"],
        )  # fmt: skip
    except ChangeRefused as exc:
        return bad_request(request, str(exc)) if exc.status == 400 else _refused(request, exc)
    except RocketMQError as exc:
        return bad_request(request, _("the broker could not be read: %(error)s") % {"error": exc})
    if job.state == RedriveJob.State.QUEUED:
        redrive.start(job)
    return redirect("consumers:dlq-job", job.pk)


def _refused(request, exc: ChangeRefused):
    return render(request, "consumers/bad_request.html", {"message": str(exc)}, status=exc.status)


@console_page
def job_page(request, pk: int):
    found = _visible_job(request, pk)
    context = {"job": found, "progress": redrive.progress(found), "nav": "dlq",
               "silent_since": claims.silent_since(found), "heartbeat_age": claims.heartbeat_age(found),
               "silent_for": claims.silent_for(found) if found.state == RedriveJob.State.RUNNING else None,
               "take_over_after": settings.CHANGE_RUN_STALE_SECONDS,
               "selection": Selection.from_wire(hide_bodies(request.user, found.selection)).describe(),
               "can_operate": scope_of(request.user).may(REQUEST, found.cluster.name, found.group)}  # fmt: skip
    return render(request, "dlq/_job.html" if request.htmx else "dlq/job.html", context)


@console_page
def job_came_back(request, pk: int):
    """The job page's count of copies back in the DLQ: loaded after the page, as it reads the broker."""
    found = _visible_job(request, pk)
    try:
        counted, error = selectors.came_back(found), None
    except RocketMQError as exc:
        counted, error = None, f"{type(exc).__name__}: {exc}"
    return render(request, "dlq/_came_back.html", {"job": found, "counted": counted, "error": error})


@console_action
def job_action(request, pk: int, action: str):
    found = _visible_job(request, pk)
    controls = {"pause": redrive.pause, "resume": redrive.resume, "cancel": redrive.cancel}
    if action not in controls:
        return bad_request(request, _("unknown action %(action)r; one of pause, resume, cancel") % {"action": action})
    try:
        controls[action](found, actor=Actor(request.user, remote_addr(request)))
    except ChangeRefused as exc:
        return _refused(request, exc)
    return redirect("consumers:dlq-job", pk)


def _visible_job(request, pk: int) -> RedriveJob:
    """The job, if its group is one the user sees (404 as for a job that is not there)."""
    found = selectors.job(pk)
    if found is None or not scope_of(request.user).sees_group(found.cluster.name, found.group):
        raise Http404(_("No redrive job #%(pk)s") % {"pk": pk})
    return found
