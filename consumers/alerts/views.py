"""The Alerts page (what is firing, silenced, pending, the history and the silences) and its
actions, and the alerts API."""

from __future__ import annotations

from django.contrib import messages as flash
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import redirect, render

from ..access import api_view, console_action, console_page, json_error, remote_addr
from ..roles import REQUEST, perm
from . import selectors, services, silences
from .forms import SilenceForm
from .models import Alert

API_STATES = ("firing", "pending", "resolved", "cleared")


def _page(request, form, *, status: int = 200):
    context = {"nav": "alerts", "form": form, "may_act": request.user.has_perm(perm(REQUEST)), **selectors.board()}
    return render(request, "alerts/index.html", context, status=status)


def _operator(request, what: str) -> None:
    if not request.user.has_perm(perm(REQUEST)):
        raise PermissionDenied(f"{what} needs the operator role")


@console_page
def index(request):
    return _page(request, SilenceForm())


@console_action
def acknowledge(request, pk: int):
    _operator(request, "acknowledging an alert")
    alert = services.acknowledge(pk, user=request.user, remote_addr=remote_addr(request))
    if alert is None:
        flash.error(request, "That alert is not firing, or was acknowledged already.")
    else:
        flash.success(request, f"Acknowledged: {alert}.")
    return redirect("consumers:alerts")


@console_action
def silence_create(request):
    _operator(request, "silencing alerts")
    form = SilenceForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    silence = silences.create(user=request.user, remote_addr=remote_addr(request), rule=data["rule"],
                              cluster=data["cluster"], subject_pattern=data["subject_pattern"],
                              minutes=data["minutes"], reason=data["reason"])  # fmt: skip
    flash.success(request, f"Silenced until {silence.ends_at:%Y-%m-%d %H:%M} UTC.")
    return redirect("consumers:alerts")


@console_action
def silence_end(request, pk: int):
    _operator(request, "ending a silence")
    if silences.end(pk, user=request.user, remote_addr=remote_addr(request)) is None:
        flash.error(request, "No such silence in force.")
    else:
        flash.success(request, "The silence is ended.")
    return redirect("consumers:alerts")


@api_view
def api_alerts(request):
    """?state=firing (default), pending, resolved or cleared; newest first, at most 500."""
    state = request.GET.get("state", "firing")
    if state not in API_STATES:
        return json_error(400, f"state must be one of {', '.join(API_STATES)}", field="state")
    order = "-started_at" if state in Alert.OPEN else "-ended_at"
    alerts = selectors.alerts().filter(state=state).order_by(order)[:500]
    return JsonResponse({"alerts": [selectors.to_wire(a) for a in alerts]})
