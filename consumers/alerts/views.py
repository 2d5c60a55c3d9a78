"""The Alerts page (what is firing, silenced, pending, the history and the silences) and its
actions, and the alerts API."""

from __future__ import annotations

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from ..identity import REQUEST, api_view, console_action, console_page, remote_addr, scope_of, within
from ..web.errors import json_error
from . import selectors, services, silences
from .forms import SilenceForm
from .models import Alert, Silence

API_STATES = ("firing", "pending", "resolved", "cleared")


def _page(request, form, *, status: int = 200):
    board = selectors.board(selectors.visible_to(request.user), within(request.user, group=None))
    may_act = scope_of(request.user).may_somewhere(REQUEST)
    return render(
        request, "alerts/index.html", {"nav": "alerts", "form": form, "may_act": may_act, **board}, status=status
    )


def _operator(request, what: str, cluster: str | None = None) -> None:
    """Silences match subjects by pattern, so they are for operators of whole clusters."""
    if not scope_of(request.user).may_all_groups(REQUEST, cluster):
        raise PermissionDenied(_("%(what)s needs the operator role on every group of the cluster") % {"what": what})


@console_page
def index(request):
    return _page(request, SilenceForm())


@console_action
def acknowledge(request, pk: int):
    alert = _visible_alert(request, pk)
    scope = scope_of(request.user)
    allowed = (
        scope.may(REQUEST, alert.cluster.name, alert.subject)
        if alert.scope == "group"
        else scope.may_all_groups(REQUEST, alert.cluster.name)
    )
    if not allowed:
        raise PermissionDenied(_("acknowledging an alert needs the operator role on what it is about"))
    alert = services.acknowledge(pk, user=request.user, remote_addr=remote_addr(request))
    if alert is None:
        flash.error(request, _("That alert is not firing, or was acknowledged already."))
    else:
        flash.success(request, _("Acknowledged: %(alert)s.") % {"alert": alert})
    return redirect("consumers:alerts")


@console_action
def silence_create(request):
    _operator(request, _("silencing alerts"))  # somewhere: the form says which cluster
    form = SilenceForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    _operator(request, _("silencing alerts"), data["cluster"].name if data["cluster"] else None)
    silence = silences.create(user=request.user, remote_addr=remote_addr(request), rule=data["rule"],
                              cluster=data["cluster"], subject_pattern=data["subject_pattern"],
                              minutes=data["minutes"], reason=data["reason"])  # fmt: skip
    flash.success(request, _("Silenced until %(end)s UTC.") % {"end": f"{silence.ends_at:%Y-%m-%d %H:%M}"})
    return redirect("consumers:alerts")


@console_action
def silence_end(request, pk: int):
    silence = Silence.objects.filter(pk=pk).select_related("cluster").first()
    _operator(request, _("ending a silence"), silence.cluster.name if silence and silence.cluster else None)
    if silences.end(pk, user=request.user, remote_addr=remote_addr(request)) is None:
        flash.error(request, _("No such silence in force."))
    else:
        flash.success(request, _("The silence is ended."))
    return redirect("consumers:alerts")


@api_view
def api_alerts(request):
    """?state=firing (default), pending, resolved or cleared; newest first, at most 500."""
    state = request.GET.get("state", "firing")
    if state not in API_STATES:
        return json_error(400, f"state must be one of {', '.join(API_STATES)}", field="state")
    order = "-started_at" if state in Alert.OPEN else "-ended_at"
    found = selectors.alerts().filter(state=state)
    shown = selectors.visible_to(request.user)
    alerts = (found if shown is None else found.filter(shown)).order_by(order)[:500]
    return JsonResponse({"alerts": [selectors.to_wire(a) for a in alerts]})


def _visible_alert(request, pk: int) -> Alert:
    shown = selectors.visible_to(request.user)
    found = Alert.objects.select_related("cluster").filter(pk=pk)
    alert = (found if shown is None else found.filter(shown)).first()
    if alert is None:
        raise Http404(_("No alert #%(pk)s") % {"pk": pk})
    return alert
