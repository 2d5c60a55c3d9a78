"""Statistics pages: the cluster's Statistics page with its top lists, the charts (JSON for
plotly.js) of a cluster and of a group, and the Jobs page with each run's log."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from ..identity import REQUEST, VIEW, cluster_or_404, console_action, console_page, scope_of, visible_clusters, within
from ..web.errors import bad_request
from ..web.inputs import read_int
from . import charts, selectors
from .forms import PRESETS, PeriodForm, RunForm
from .models import StatsRun
from .runs import RunRefused, RunRequest, log_text, request_run
from .tasks import run_statistics


def _period(request):
    form = PeriodForm(request.GET)
    if not form.is_valid():
        return form, None
    first, last = form.period()
    return form, (first, last, selectors.days_between(first, last))


@console_page
def overview(request):
    clusters = visible_clusters(request)
    name = request.GET.get("cluster") or (clusters[0].name if clusters else None)
    cluster = cluster_or_404(request, name) if name else None
    form, period = _period(request)
    if period is None:
        return bad_request(request, _("Invalid period: %(errors)s") % {"errors": form.errors.as_text()})
    first, last, _days = period
    scope = scope_of(request.user)
    mine = within(request.user, cluster="cluster", group="group")
    context = {
        "nav": "stats",
        "clusters": clusters,
        "cluster": cluster,
        "form": form,
        "first": first,
        "last": last,
        "query": request.GET.urlencode(),
        "top_sections": _top_sections(selectors.top_lists(cluster.name, first, last, within=mine)) if cluster else [],
        # a cluster's totals count every team's groups: for those who see all of them
        "cluster_totals": bool(cluster) and scope.may_all_groups(VIEW, cluster.name),
        "may_run": bool(cluster) and scope.may_all_groups(REQUEST, cluster.name),
        "period_presets": PRESETS,
        "period_hidden": [("cluster", cluster.name)] if cluster else [],
        "nightly_at": settings.STATS_NIGHTLY_AT,
        "runs": selectors.recent_runs(5, clusters=_run_clusters(request)),
        "run_form": RunForm(initial={"first": last, "last": last, "cluster": name}),
    }
    return render(request, "stats/overview.html", context)


def _top_sections(top: dict) -> list[tuple]:
    titles = {
        "lag_seconds_p95": (_("Worst p95 lag"), _("seconds")),
        "breach_minutes": (_("Most SLO breach"), _("minutes")),
        "dlq_arrivals": (_("Most dead letters"), _("messages")),
    }
    return [(key, *titles[key], rows) for key, rows in top.items()]


@console_page
def cluster_charts(request, cluster: str):
    cluster = cluster_or_404(request, cluster)
    if not scope_of(request.user).may_all_groups(VIEW, cluster.name):
        raise Http404(
            _("No totals of %(cluster)s for you: they count groups outside your scope") % {"cluster": cluster.name}
        )
    form, period = _period(request)
    if period is None:
        return JsonResponse({"error": form.errors.as_text()}, status=400)
    first, last, days = period
    figures = charts.cluster_figures(
        days, selectors.cluster_days(cluster.name, first, last), selectors.cluster_totals(cluster.name, first, last)
    )
    return JsonResponse({"first": first, "last": last, "figures": figures})


@console_page
def group_charts(request, cluster: str, group: str):
    cluster = cluster_or_404(request, cluster, group)
    form, period = _period(request)
    if period is None:
        return JsonResponse({"error": form.errors.as_text()}, status=400)
    first, last, days = period
    rows = selectors.group_days(cluster.name, group, first, last)
    slo = next((r.slo_seconds for r in sorted(rows.values(), key=lambda r: r.date, reverse=True)), None)
    cells = selectors.health_cells(cluster.name, group, first, last)
    figures = charts.group_figures(days, rows, cells, slo if slo is not None else settings.STATS_LAG_SLO_SECONDS)
    return JsonResponse({"first": first, "last": last, "figures": figures})


@console_page
def jobs(request):
    runs = selectors.recent_runs(100, clusters=_run_clusters(request))
    active = any(run.state in (StatsRun.State.QUEUED, StatsRun.State.RUNNING) for run in runs)
    template = "stats/_runs.html" if request.htmx else "stats/jobs.html"
    return render(request, template, {"nav": "stats", "runs": runs, "active": active})


@console_page
def job_log(request, pk: int):
    """The latest attempt's log, or ?attempt=N's (each attempt of a run keeps its own)."""
    run = get_object_or_404(StatsRun, pk=pk)
    if not _sees_run(request, run):
        raise Http404(_("No statistics run #%(pk)s") % {"pk": pk})
    attempt = request.GET.get("attempt", "")
    try:  # "٣".isdigit() is true, and int() reads it as 3: the shared rule reads ASCII digits only
        number = read_int(attempt, 1, 2**31 - 1) if attempt else None
    except ValueError as exc:
        return bad_request(request, _("attempt: %(problem)s") % {"problem": exc})
    if number is not None and number > run.attempt:
        raise Http404(_("%(run)s has no attempt %(attempt)s") % {"run": run, "attempt": attempt})
    text = log_text(run, attempt=number)
    return HttpResponse(text or "(no log yet)", content_type="text/plain; charset=utf-8")


@console_action
def start_run(request):
    if not scope_of(request.user).may_somewhere(REQUEST):
        raise PermissionDenied(_("starting a statistics run needs the operator role"))
    form = RunForm(request.POST)
    if not form.is_valid():
        return bad_request(request, _("Invalid run: %(errors)s") % {"errors": form.errors.as_text()})
    data = form.cleaned_data
    # a run computes every group of its cluster (of all of them, without one)
    if not scope_of(request.user).may_all_groups(REQUEST, data["cluster"] or None):
        raise PermissionDenied(
            _("a statistics run computes every group of the cluster: it needs the operator role on all of them")
        )
    try:
        run = request_run(RunRequest(data["first"], data["last"], data["cluster"] or None), trigger="page",
                          user=request.user)  # fmt: skip
    except RunRefused as exc:
        return bad_request(request, _("Run refused: %(why)s") % {"why": exc})
    run_statistics.delay(run.pk)
    flash.success(request, _("%(run)s queued.") % {"run": run})
    return redirect("consumers:stats-jobs")


def _run_clusters(request) -> list[str] | None:
    """The clusters whose statistics runs the user sees (None: every run, site-wide ones too)."""
    scope = scope_of(request.user)
    if scope.everything:
        return None
    return [c.name for c in visible_clusters(request)]


def _sees_run(request, run: StatsRun) -> bool:
    shown = _run_clusters(request)
    return shown is None or bool(set(shown) & set(run.clusters or []))
