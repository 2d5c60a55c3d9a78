"""Lag reports: validate and save a request, build its files (with progress), serve downloads
(audited), expire old ones, and the weekly scheduled report per cluster.

Nothing is created for a bad request: `check_spec` raises ReportRefused with the reason
before any row exists. A build moves the report from queued to running with a conditional
UPDATE, so a task delivered twice builds once.

A report is written in one language (Report.language), its title, files and progress stages:
the language its maker reads the console in (the view passes it: their saved language, else
their browser's), language_for_user without a request; a scheduled report's is that of its
recipients (scheduled_language). Each recipient of its e-mail reads the text in their own
language (_mail); the attached files are the report's, in its language.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext

from .. import audit
from ..identity import scope_from_wire, scope_to_wire
from ..jobs import claims, processes
from ..languages.preferences import by_language, language_for_address, language_for_user
from ..models import Cluster
from .content import ReportSpec, build_content, granularity_text, periods_of, spec_rows
from .csvfile import write_csv
from .models import Report
from .pdf import write_pdf
from .xlsx import write_xlsx

log = logging.getLogger(__name__)
HOURLY_MAX_DAYS = 31
WRITERS = {"csv": write_csv, "xlsx": write_xlsx}
# progress (percent) reached when each format is written, in the order they are built
FORMAT_ORDER = ("csv", "xlsx", "pdf")


class ReportRefused(Exception):
    """A report that cannot be made; the message says why."""


def check_spec(spec: ReportSpec) -> None:
    if not spec.clusters:
        raise ReportRefused(gettext("choose at least one cluster"))
    known = set(Cluster.objects.filter(name__in=spec.clusters).values_list("name", flat=True))
    unknown = sorted(set(spec.clusters) - known)
    if unknown:
        raise ReportRefused(gettext("unknown cluster %(clusters)s") % {"clusters": ", ".join(unknown)})
    _check_range(spec, timezone.now().date())
    _check_size(spec)


def _check_range(spec: ReportSpec, today: dt.date) -> None:
    """Within the statistics kept, not past today, at most REPORT_MAX_DAYS (31 when hourly)."""
    if spec.last < spec.first:
        raise ReportRefused(
            gettext("the range ends (%(last)s) before it starts (%(first)s)") % {"last": spec.last, "first": spec.first}
        )
    if spec.first > today:
        raise ReportRefused(gettext("%(first)s is in the future") % {"first": spec.first})
    if spec.last > today:
        raise ReportRefused(
            gettext("%(last)s is after today (%(today)s, UTC): there are no statistics for it yet")
            % {"last": spec.last, "today": today}
        )
    oldest = today - dt.timedelta(days=settings.STATS_RETENTION_DAYS)
    if spec.first < oldest:
        raise ReportRefused(
            gettext("%(first)s is past the statistics retention (%(days)s days: from %(oldest)s)")
            % {"first": spec.first, "days": settings.STATS_RETENTION_DAYS, "oldest": oldest}
        )
    days = (spec.last - spec.first).days + 1
    if days > settings.REPORT_MAX_DAYS:
        raise ReportRefused(
            gettext("a report covers at most %(max)s days; %(first)s to %(last)s is %(days)s")
            % {"max": settings.REPORT_MAX_DAYS, "first": spec.first, "last": spec.last, "days": days}
        )
    if spec.granularity == "hourly" and days > HOURLY_MAX_DAYS:
        raise ReportRefused(
            gettext("hourly reports cover at most %(days)s days; ask for a daily one") % {"days": HOURLY_MAX_DAYS}
        )


def estimated_rows(spec: ReportSpec) -> tuple[int, int]:
    """(groups, rows) of the report, counted before it is built: the builder writes one row per
    group with statistics in the range and period of the range, gaps included (build_content)."""
    groups = spec_rows(spec).values("cluster", "group").distinct().count()
    return groups, groups * len(periods_of(spec))


def _check_size(spec: ReportSpec) -> None:
    groups, rows = estimated_rows(spec)
    if not groups:
        raise ReportRefused(
            gettext(
                "the range is empty: no statistics for these clusters and groups between %(first)s and %(last)s "
                "(the nightly job computes each day after it ends)"
            )
            % {"first": spec.first, "last": spec.last}
        )
    if rows > settings.REPORT_MAX_ROWS:
        figures = {"rows": f"{rows:,}", "groups": f"{groups:,}", "periods": f"{rows // groups:,}",
                   "max": f"{settings.REPORT_MAX_ROWS:,}"}  # fmt: skip
        if spec.granularity == "hourly":
            too_big = gettext(
                "the report would hold %(rows)s rows (%(groups)s groups × %(periods)s hours), more than the "
                "%(max)s a report may hold: narrow the range, the clusters or the groups"
            )
        else:
            too_big = gettext(
                "the report would hold %(rows)s rows (%(groups)s groups × %(periods)s days), more than the "
                "%(max)s a report may hold: narrow the range, the clusters or the groups"
            )
        raise ReportRefused(too_big % figures)


def title_of(spec: ReportSpec) -> str:
    """The report's title in the active language (dates in ISO 8601 in every language: the
    title is also the e-mail's subject, and a file's name has the same dates)."""
    if spec.first == spec.last:
        days = spec.first.isoformat()
    else:
        days = gettext("%(first)s to %(last)s") % {"first": spec.first, "last": spec.last}
    values = {"clusters": ", ".join(spec.clusters), "days": days, "granularity": granularity_text(spec.granularity)}
    if spec.group_filter:
        title = gettext("Lag report %(clusters)s, groups containing '%(filter)s', %(days)s (%(granularity)s, UTC)")
        return title % {**values, "filter": spec.group_filter}
    return gettext("Lag report %(clusters)s, %(days)s (%(granularity)s, UTC)") % values


def request_report(
    spec: ReportSpec, formats: list[str], *, user=None, trigger: str = "page", language: str | None = None
) -> Report:
    """Save a report to build; `language`: the one to write it in (default: the user's, else
    the site's)."""
    check_spec(spec)
    wanted = [f for f in FORMAT_ORDER if f in formats]
    if not wanted:
        raise ReportRefused(gettext("choose at least one format of %(formats)s") % {"formats": ", ".join(FORMAT_ORDER)})
    language = language or language_for_user(user)
    with translation.override(language):
        title = title_of(spec)
    return Report.objects.create(
        title=title,
        language=language,
        clusters=list(spec.clusters),
        group_filter=spec.group_filter,
        scope=scope_to_wire(spec.scope),
        first=spec.first,
        last=spec.last,
        granularity=spec.granularity,
        formats=wanted,
        trigger=trigger,
        created_by=user,
        expires_at=timezone.now() + dt.timedelta(days=settings.REPORT_RETENTION_DAYS),
    )


def spec_of(report: Report) -> ReportSpec:
    return ReportSpec(
        tuple(report.clusters),
        report.first,
        report.last,
        report.granularity,
        report.group_filter,
        scope_from_wire(report.scope),
    )


def report_dir(report: Report) -> Path:
    return Path(settings.REPORT_DIR) / str(report.pk)


def file_name(report: Report, fmt: str) -> str:
    clusters = "-".join(report.clusters)
    groups = f"-{report.group_filter}" if report.group_filter else ""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{clusters}{groups}")
    return f"lag-report-{safe}-{report.first}-{report.last}-{report.granularity}-UTC.{fmt}"


def build_report(report_id: int) -> Report:
    """Build a queued report (or take over one whose worker died: a build starts again)."""
    claimed = claims.claim(Report, report_id, ready={Report.State.QUEUED}, running=Report.State.RUNNING)
    report = Report.objects.get(pk=report_id)
    if claimed is None:
        return report
    # everything the build writes (files, stages) in the report's language, whatever the worker's
    with (
        claims.beating(Report, report.pk, claimed.token),
        translation.override(report.language or settings.LANGUAGE_CODE),
    ):
        report = _build(report, claimed.token)
    if report.trigger == "scheduled" and report.state == Report.State.READY and settings.REPORT_EMAIL_TO:
        _mail(report)
    return report


def _build(report: Report, token: str) -> Report:
    directory = report_dir(report)
    directory.mkdir(parents=True, exist_ok=True)

    def progress(percent: int, stage: str) -> None:
        claims.beat(Report, report.pk, token, progress=percent, stage=stage)

    work = None
    try:
        # a take-over starts the build again as a new attempt, once the earlier one's chromium is dead
        report.attempt = processes.begin_attempt(Report, report.pk, token)
        for left in directory.glob("attempt-*"):  # earlier attempts' (their worker died)
            shutil.rmtree(left, ignore_errors=True)
        # the attempt's files are written in its own folder and moved into place when it ends
        work = directory / f"attempt-{report.attempt}"
        work.mkdir()
        content = build_content(spec_of(report), progress)
        files = {}
        step = 70 // len(report.formats)
        for index, fmt in enumerate(report.formats):
            progress(30 + index * step, gettext("writing %(format)s") % {"format": fmt.upper()})
            name = file_name(report, fmt)
            if fmt == "pdf":
                write_pdf(content, work / name, title=report.title, owner=processes.Owner(Report, report.pk, token))
            else:
                WRITERS[fmt](content, work / name)
            files[fmt] = name
        report.files, report.files_attempt = files, report.attempt
        report.groups = len(content.summary)
        report.rows = len(content.detail)
        shares = [share for share in content.coverage.values() if share is not None]
        report.coverage = min(shares) if shares else None
        report.state, report.progress, report.stage = Report.State.READY, 100, "ready"
    except processes.Superseded:  # taken over: the attempt that took it ends it
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        return Report.objects.get(pk=report.pk)
    except Exception as exc:  # recorded on the report, which must never stay "running"
        log.exception("report %s failed", report.pk)
        report.state, report.error, report.stage = Report.State.FAILED, f"{type(exc).__name__}: {exc}", "failed"
    report.finished_at = timezone.now()
    ended = {f: getattr(report, f) for f in ("files", "files_attempt", "groups", "rows", "coverage", "state",
                                             "progress", "stage", "error", "finished_at")}  # fmt: skip
    try:
        # only while the build is still ours: one taken over by another worker is that one's to end
        with transaction.atomic():
            if Report.objects.filter(pk=report.pk, run_token=token).update(**ended):
                for name in report.files.values() if report.state == Report.State.READY else ():
                    os.replace(work / name, directory / name)
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return Report.objects.get(pk=report.pk)


def give_up(report_id: int, token: str, why: str) -> None:
    """End a build killed at its time limit (claims.requeue_silent): failed, with why, its
    chromium killed if it outlived its worker (one that does not die: the next housekeeping)."""
    try:
        processes.stop_recorded(Report, report_id)
    except processes.StillRunning as exc:
        log.error("report #%s not ended: %s", report_id, exc)
        return
    Report.objects.filter(pk=report_id, run_token=token).update(
        state=Report.State.FAILED, error=why, stage="failed", finished_at=timezone.now()
    )


def download_path(report: Report, fmt: str, *, username: str, remote_addr: str = "") -> Path:
    """The file to send, after recording the download in the audit log."""
    name = report.files.get(fmt)
    if report.state != Report.State.READY or not name:
        raise ReportRefused(gettext("%(report)s has no %(format)s file") % {"report": report, "format": fmt.upper()})
    path = report_dir(report) / name
    if not path.exists():
        gone = gettext("%(report)s's %(format)s file is gone (expired or deleted)")
        raise ReportRefused(gone % {"report": report, "format": fmt.upper()})
    audit.record("report-download", username=username, remote_addr=remote_addr, cluster=",".join(report.clusters),
                 details={"report": report.pk, "format": fmt, "title": report.title})  # fmt: skip
    return path


def expire_reports(now: dt.datetime | None = None) -> int:
    expired = list(Report.objects.filter(expires_at__lt=now or timezone.now()))
    for report in expired:
        shutil.rmtree(report_dir(report), ignore_errors=True)
        report.delete()
    return len(expired)


def weekly_reports(*, enqueue: Callable[[int], object], today: dt.date | None = None) -> list[Report]:
    """Last week (the seven days before today, UTC) for every cluster, all formats, each handed
    to `enqueue` once committed (the scheduling task gives its build task, with its own time
    limit: the scheduler only enqueues); built, it is e-mailed to REPORT_EMAIL_TO when set. A
    cluster without statistics for the week is logged, skipped."""
    today = today or timezone.now().date()
    first, last = today - dt.timedelta(days=7), today - dt.timedelta(days=1)
    made, language = [], scheduled_language()
    for cluster in Cluster.objects.order_by("name").values_list("name", flat=True):
        spec = ReportSpec((cluster,), first, last)
        try:
            report = request_report(spec, list(FORMAT_ORDER), trigger="scheduled", language=language)
        except ReportRefused as exc:
            log.warning("weekly report for %s not made: %s", cluster, exc)
            audit.record("report-scheduled", username="scheduler", cluster=cluster, details={"refused": str(exc)})
            continue
        audit.record("report-scheduled", username="scheduler", cluster=cluster,
                     details={"report": report.pk, "title": report.title})  # fmt: skip
        transaction.on_commit(lambda pk=report.pk: enqueue(pk))
        made.append(report)
    return made


def scheduled_language() -> str:
    """The language of the scheduled reports. They are built once, for everyone on
    REPORT_EMAIL_TO: in the language of those people when all of them read the same one
    (language_for_address: a saved language, else the site's), else in the site default
    (LANGUAGE_CODE). A report is a set of files, not one per reader; each still gets the
    e-mail's text in their own language (_mail)."""
    languages = {language_for_address(address) for address in settings.REPORT_EMAIL_TO}
    return languages.pop() if len(languages) == 1 else settings.LANGUAGE_CODE


def _mail(report: Report) -> None:
    """One message per language of the recipients, the same files attached to each."""
    spec, written_in = spec_of(report), report.language or settings.LANGUAGE_CODE
    for language, recipients in by_language(settings.REPORT_EMAIL_TO).items():
        with translation.override(language):
            title = title_of(spec)
            body = gettext("%(title)s\n\nAttached: PDF and XLSX.") % {"title": title}
            if language != written_in:
                name = translation.get_language_info(written_in)["name_translated"]
                body += "\n" + gettext("The attached files are in %(language)s.") % {"language": name}
        message = EmailMessage(subject=title, body=body, to=recipients)
        for fmt in ("pdf", "xlsx"):
            if fmt in report.files:
                message.attach_file(str(report_dir(report) / report.files[fmt]))
        message.send(fail_silently=False)
