"""Report pages: the form and the saved reports (with live progress), downloads (audited),
and "report now" from the live snapshot. Every role may make and download lag reports: they
carry no message bodies, keys or client addresses."""

from __future__ import annotations

import dataclasses

from django.contrib import messages as flash
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from .. import audit
from ..identity import console_action, console_page, remote_addr, scope_of, visible_clusters
from ..jobs.redis_client import get_redis
from ..web.csvstream import attachment
from ..web.errors import bad_request
from . import live, services
from .forms import LiveReportForm, ReportForm
from .models import Report
from .tasks import build_report

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
}


def _names(request) -> list[str]:
    return sorted(c.name for c in visible_clusters(request))


def _reports(request):
    """The reports the user may read: all of them when they see every group; otherwise their
    own (made within their scope: a scheduled or someone else's report may hold other groups)."""
    found = Report.objects.select_related("created_by")
    return found if scope_of(request.user).everything else found.filter(created_by=request.user)


@console_page
def index(request):
    names = _names(request)
    form = ReportForm(cluster_names=names, initial={"clusters": names[:1]})
    reports = _reports(request)[:100]
    return render(request, "reports/index.html", {"nav": "reports", "form": form, "reports": reports})


@console_action
def create(request):
    form = ReportForm(request.POST, cluster_names=_names(request))
    if not form.is_valid():
        return bad_request(request, _("Invalid report: %(errors)s") % {"errors": form.errors.as_text()})
    spec = dataclasses.replace(form.spec(), scope=scope_of(request.user))
    try:
        # written in the language the maker reads this page in: their saved one, else their browser's
        language = translation.get_language()
        report = services.request_report(spec, form.cleaned_data["formats"], user=request.user, language=language)
    except services.ReportRefused as exc:
        return bad_request(request, _("Report refused: %(why)s") % {"why": exc})
    build_report.delay(report.pk)
    flash.success(request, _("%(report)s is being built.") % {"report": report})
    return redirect("consumers:reports")


@console_page
def report_row(request, pk: int):
    """The report's row (state, progress bar, downloads): htmx polls it while it builds."""
    report = get_object_or_404(_reports(request), pk=pk)
    return render(request, "reports/_row.html", {"report": report})


@console_page
def download(request, pk: int, fmt: str):
    report = get_object_or_404(_reports(request), pk=pk)
    if fmt not in CONTENT_TYPES:
        raise Http404(_("no format %(format)r") % {"format": fmt})
    try:
        path = services.download_path(report, fmt, username=request.user.username, remote_addr=remote_addr(request))
    except services.ReportRefused as exc:
        raise Http404(str(exc)) from None
    response = FileResponse(open(path, "rb"), content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = attachment(path.name)  # Django's gives either filename or filename*
    return response


@console_page
def report_now(request, fmt: str):
    form = LiveReportForm(request.GET)
    if fmt not in ("csv", "xlsx") or not form.is_valid():
        return bad_request(request, _("Report now comes as .csv or .xlsx, with optional cluster and group_filter"))
    clusters = sorted(visible_clusters(request), key=lambda c: c.name)
    if form.cleaned_data["cluster"]:
        clusters = [c for c in clusters if c.name == form.cleaned_data["cluster"]]
        if not clusters:
            return bad_request(request, _("Unknown cluster %(cluster)r") % {"cluster": form.cleaned_data["cluster"]})
    rows = live.live_rows(get_redis(), clusters, form.cleaned_data["group_filter"], scope_of(request.user))
    audit.record("report-download", username=request.user.username, remote_addr=remote_addr(request),
                 cluster=",".join(c.name for c in clusters),
                 details={"report": "now", "format": fmt, "rows": len(rows)})  # fmt: skip
    name = f"lag-now-{'-'.join(c.name for c in clusters) or 'none'}-{timezone.now():%Y%m%dT%H%M%SZ}.{fmt}"
    if fmt == "csv":
        response = StreamingHttpResponse(live.live_csv_lines(rows), content_type=CONTENT_TYPES["csv"])
    else:
        response = HttpResponse(live.live_xlsx(rows), content_type=CONTENT_TYPES["xlsx"])
    response["Content-Disposition"] = attachment(name)
    return response
