"""DLQ redrive jobs: plan (count the selection, check the target, ask an approver when it is
large), pause, resume and cancel. Running a job, and how it sends every selected message
exactly once even when a worker dies, is in `runner.py`.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from .. import audit
from ..changes import workflow
from ..changes.guards import Actor, ChangeRefused, require_role, require_topic, require_writable
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST
from ..models import Cluster
from ..rocketmq import AdminClient
from .browse import Selection, dlq_queues, scan
from .models import RedriveJob
from .targets import TargetRefused, check_group_target, check_writable

ACTIVE = {
    RedriveJob.State.AWAITING_APPROVAL,
    RedriveJob.State.QUEUED,
    RedriveJob.State.RUNNING,
    RedriveJob.State.PAUSED,
}


# planning


def plan_redrive(
    *,
    actor: Actor,
    cluster: Cluster,
    group: str,
    selection: Selection,
    target: str,
    target_topic: str = "",
    rate: int,
    reason: str = "",
    accept_unreadable: bool = False,
    ask_approver: bool = False,
) -> RedriveJob:
    """Check, count and create a job: queued, or waiting for an approver when it is large or
    `ask_approver` says so whatever its size (what an agent's proposal does: it only proposes).

    A DLQ broker that cannot be read (failing, or a known broker missing from the name server)
    is never silently left out: the plan names it, and a small job starts only when the
    requester accepts that its dead letters stay where they are (`accept_unreadable`); a large
    one needs the approver's same choice (workflow.approve). The job then ends partial."""
    require_role(actor, REQUEST, _("redriving"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    if not 1 <= rate <= settings.REDRIVE_MAX_RATE:
        raise ChangeRefused(
            _("the rate must be between 1 and %(max)s messages per second") % {"max": settings.REDRIVE_MAX_RATE}
        )
    if target not in RedriveJob.Target.values:
        targets = ", ".join(RedriveJob.Target.values)
        raise ChangeRefused(
            _("unknown target %(target)r; one of: %(targets)s") % {"target": target, "targets": targets}
        )
    if target == RedriveJob.Target.TOPIC and target_topic.strip():
        # another topic may be another team's: the requester must be an operator there too
        require_topic(actor, REQUEST, cluster, target_topic.strip())
    if target == RedriveJob.Target.TOPIC and not target_topic.strip():
        raise ChangeRefused(_("redriving to another topic needs the topic"))
    if RedriveJob.objects.filter(cluster=cluster, group=group, state__in=ACTIVE).exists():
        raise ChangeRefused(
            _("a redrive of %(dlq)s is already active: one job per DLQ at a time") % {"dlq": f"%DLQ%{group}"}, 409
        )
    counted = run_on_cluster(
        cluster, lambda c: _count(c, group, selection, target, target_topic.strip(), cluster.proxy_list)
    )
    unreadable = _unreadable(cluster, counted)
    if counted["total"] == 0:
        if unreadable:
            raise ChangeRefused(
                _("no message in the DLQ matches the selection on the brokers read (%(brokers)s could not be)")
                % {"brokers": _named(unreadable)}
            )
        raise ChangeRefused(_("no message in the DLQ matches the selection"))
    large = counted["total"] > settings.REDRIVE_APPROVAL_THRESHOLD or ask_approver
    if unreadable and not large and not accept_unreadable:
        raise ChangeRefused(
            _(
                "the DLQ could not be read on %(brokers)s: its dead letters there would not be part of this job. "
                "Redrive with 'the readable brokers only' (accept_unreadable) to go ahead, or wait until it is back"
            )
            % {"brokers": _named(unreadable)},
            409,
        )
    if ask_approver and not (reason or "").strip():
        raise ChangeRefused(_("a redrive for an approver needs a reason for them"))
    if large and not (reason or "").strip():
        raise ChangeRefused(
            _("%(total)s messages is more than %(threshold)s: it needs an approver, and a reason for them")
            % {"total": counted["total"], "threshold": settings.REDRIVE_APPROVAL_THRESHOLD}
        )
    with transaction.atomic():
        job = RedriveJob.objects.create(
            cluster=cluster,
            group=group,
            selection=selection.to_wire(),
            target=target,
            target_topic=target_topic.strip(),
            rate=rate,
            state=RedriveJob.State.AWAITING_APPROVAL if large else RedriveJob.State.QUEUED,
            total=counted["total"],
            bounds=counted["bounds"],
            checkpoints={source: {"next": start} for source, start in counted["starts"].items()},
            untouched=unreadable,
            created_by=actor.user,
        )
        with translation.override("en"):  # the audit log and the request's params keep it in English
            target_description = job.target_description
        details = {"job": job.pk, "total": job.total, "target": target_description, "rate": rate,
                   "selection": selection.to_wire(), "left_unreadable": [u["broker"] for u in unreadable]}  # fmt: skip
        audit.record("redrive-plan", username=actor.username, remote_addr=actor.remote_addr, cluster=cluster.name,
                     group=group, details=details)  # fmt: skip
        if large:
            job.change_request = workflow.submit(
                actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.REDRIVE,
                params={"job": job.pk, "selection": selection.to_wire(), "target": target_description,
                        "rate": rate}, plan={"rows": [], "totals": {}, "job": job.pk, "total": job.total,
                                             "unreadable": unreadable},
                reason=reason,
            )  # fmt: skip
            job.save(update_fields=["change_request"])
    return job


def _unreadable(cluster: Cluster, counted: dict) -> list[dict]:
    """DLQ brokers the count could not read, and known brokers the name server no longer lists
    (whether they hold dead letters of this group is unknown, so they are named too)."""
    from ..models import KnownBroker

    found = [{"broker": b, "reason": why, "since": None} for b, why in sorted(counted["unreadable"].items())]
    for known in KnownBroker.objects.filter(cluster=cluster).exclude(name__in=counted["listed"]).order_by("name"):
        since = known.missing_since.isoformat() if known.missing_since else None
        found.append({"broker": known.name, "reason": _("missing from the name server"), "since": since})
    return found


def _named(unreadable: list[dict]) -> str:
    return ", ".join(f"{u['broker']} ({u['reason']})" for u in unreadable)


async def _count(
    client: AdminClient, group: str, selection: Selection, target: str, target_topic: str, proxies: list[str] = ()
) -> dict:
    unreadable: dict[str, str] = {}
    queues = await dlq_queues(client, group, unreadable=unreadable)
    listed = set((await client.topology.cluster_info()).masters())
    if not queues and not unreadable:
        raise ChangeRefused(
            _("group %(group)s has no dead-letter queue on the brokers listed by the name server") % {"group": group}
        )
    try:
        if target == RedriveJob.Target.TOPIC:
            await check_writable(client, target_topic)
        elif target == RedriveJob.Target.GROUP:
            await check_group_target(client, group, proxies)
    except TargetRefused as exc:
        raise ChangeRefused(str(exc)) from None
    total = 0
    async for _message in scan(client, group, selection, queues):
        total += 1
    return {
        "total": total,
        "bounds": {q.source: q.max for q in queues},
        "starts": {q.source: q.min for q in queues},
        "unreadable": unreadable,
        "listed": sorted(listed),
    }


# controls


def pause(job: RedriveJob, *, actor: Actor) -> RedriveJob:
    return _move(job, {RedriveJob.State.QUEUED, RedriveJob.State.RUNNING}, RedriveJob.State.PAUSED, actor, "pause")


def resume(job: RedriveJob, *, actor: Actor) -> RedriveJob:
    if RedriveJob.objects.get(pk=job.pk).shown_state == "pausing":  # never two workers on one job
        raise ChangeRefused(
            _("redrive #%(pk)s is pausing: its worker is sending the window in flight; resume once it is paused")
            % {"pk": job.pk},
            409,
        )
    resumed = _move(job, {RedriveJob.State.PAUSED}, RedriveJob.State.QUEUED, actor, "resume", run_token="")
    _enqueue(resumed)
    return resumed


def cancel(job: RedriveJob, *, actor: Actor) -> RedriveJob:
    from .ending import job_ended

    states = {RedriveJob.State.QUEUED, RedriveJob.State.RUNNING, RedriveJob.State.PAUSED,
              RedriveJob.State.AWAITING_APPROVAL}  # fmt: skip
    cancelled = _move(job, states, RedriveJob.State.CANCELLED, actor, "cancel", finished_at=timezone.now())
    job_ended(cancelled)
    return cancelled


def _move(job: RedriveJob, expected: set, to: str, actor: Actor, action: str, **fields) -> RedriveJob:
    require_role(actor, REQUEST, _("controlling a redrive"), "operator", cluster=job.cluster, group=job.group)
    with transaction.atomic():
        if not RedriveJob.objects.filter(pk=job.pk, state__in=expected).update(state=to, **fields):
            now = RedriveJob.objects.get(pk=job.pk).state
            raise ChangeRefused(
                _("redrive #%(pk)s is %(state)s: cannot %(action)s it")
                % {"pk": job.pk, "state": now, "action": action},
                409,
            )
        audit.record(f"redrive-{action}", username=actor.username, remote_addr=actor.remote_addr,
                     cluster=job.cluster.name, group=job.group, details={"job": job.pk})  # fmt: skip
    return RedriveJob.objects.select_related("cluster").get(pk=job.pk)


def _enqueue(job: RedriveJob) -> None:
    from .tasks import run_redrive

    transaction.on_commit(lambda: run_redrive.delay(job.pk))


def start(job: RedriveJob) -> None:
    """Hand a queued job to a worker."""
    _enqueue(job)


RECENT_SECONDS = 10


def progress(job: RedriveJob) -> dict:
    """Moved / total, rate and ETA for the job page. The rate since the start hides a pause or
    a burst; the rate over the last 10 s (from the sends recorded) is what the broker gets now."""
    now = timezone.now()
    elapsed = ((job.finished_at or now) - job.started_at).total_seconds() if job.started_at else 0
    rate = job.moved / elapsed if elapsed > 0 else None
    left = max(0, job.total - job.moved - job.failed)
    recent = None
    if job.state == RedriveJob.State.RUNNING:
        since = now - dt.timedelta(seconds=RECENT_SECONDS)
        recent = round(job.messages.filter(sent_at__gt=since).count() / RECENT_SECONDS, 1)
    return {
        "rate_last_10s": recent,
        "moved": job.moved,
        "failed": job.failed,
        "total": job.total,
        "percent": round(100 * (job.moved + job.failed) / job.total, 1) if job.total else 100.0,
        "measured_rate": round(rate, 1) if rate else None,  # what it achieved; "rate" is the one set
        "eta_seconds": round(left / rate) if rate and job.state == RedriveJob.State.RUNNING else None,
    }
