"""The clients of a group as they see themselves: the list with each one's running info, one
client's page, the stacks of every client captured on demand and clustered; and the request to
verify a stored message's consumption with one client (verify.py)."""

from __future__ import annotations

import time

from django import forms
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..changes.guards import Actor, ChangeRefused, require_role
from ..changes.pages import submit_from
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST, cluster_or_404, console_action, console_page, remote_addr, scope_of
from ..jobs.redis_client import get_redis
from ..messages import services as messages
from ..rocketmq import RocketMQError
from . import services, verify


def _read(cluster, group: str, **options) -> tuple[services.GroupClients | None, str | None]:
    try:
        return services.read_clients(cluster, group, **options), None
    except RocketMQError as exc:
        return None, _("the cluster could not be read: %(error)s") % {"error": f"{type(exc).__name__}: {exc}"}


def _kept(context: dict, cluster, group: str) -> dict:
    """The group's kept captures, and the two newest compared (operators and admins only)."""
    kept = services.captures(get_redis(), cluster, group, now=time.time())
    context["captures"] = kept
    if len(kept) >= 2:
        context["stuck"] = services.stuck(kept[0], kept[1])
        context["between"] = kept[0]["at"] - kept[1]["at"]
    return context


@console_page
def group_clients(request, cluster: str, group: str):
    found = cluster_or_404(request, cluster, group)
    clients, error = _read(found, group)
    context = {"cluster": found, "group": group, "nav": "groups", "clients": clients, "error": error}
    if scope_of(request.user).may(REQUEST, found.name, group):
        _kept(context, found, group)
    return render(request, "clients/group.html", context, status=502 if error else 200)


@console_page
def client_detail(request, cluster: str, group: str, client_id: str):
    found = cluster_or_404(request, cluster, group)
    clients, error = _read(found, group, client_id=client_id)
    reading = clients.clients[0] if clients else None
    context = {"cluster": found, "group": group, "nav": "groups", "client_id": client_id, "reading": reading,
               "error": error}  # fmt: skip
    return render(request, "clients/client.html", context, status=502 if error else 200)


@console_action
def capture_stacks(request, cluster: str, group: str):
    """Every client's threads, now: the busy consume threads clustered by where they are."""
    found = cluster_or_404(request, cluster, group)
    context = {"cluster": found, "group": group, "nav": "groups"}
    taken, status = _capture(request, found, group, context)
    if taken is not None:
        context.update(clients=taken.clients, reading=taken.reading, cut=taken.cut, captured=True)
        _kept(context, found, group)
    return render(request, "clients/group.html", context, status=status)


@console_action
def capture_client_stacks(request, cluster: str, group: str, client_id: str):
    """One client's threads, now (kept with the group's captures)."""
    found = cluster_or_404(request, cluster, group)
    context = {"cluster": found, "group": group, "nav": "groups", "client_id": client_id}
    taken, status = _capture(request, found, group, context, client_id=client_id)
    if taken is not None:
        context.update(reading=taken.clients.clients[0], stacks=taken.reading, cut=taken.cut, captured=True)
    return render(request, "clients/client.html", context, status=status)


def _capture(request, cluster, group: str, context: dict, **options) -> tuple[services.Capture | None, int]:
    """The capture and the page's status; None with the error in `context` when refused (403 for a
    role without it, 429 within the group's rate limit) or when the cluster could not be read (502)."""
    actor = Actor(request.user, remote_addr(request))
    try:
        require_role(actor, REQUEST, _("capturing stacks"), _("operator"), cluster=cluster, group=group)
    except ChangeRefused as exc:
        context["error"] = str(exc)
        return None, exc.status
    if not services.capture_allowed(get_redis(), cluster, group):
        context["error"] = _("the group's stacks were captured less than %(seconds)s s ago: try again shortly") % {
            "seconds": services.CAPTURE_EVERY
        }
        return None, 429
    try:
        taken = services.capture_now(get_redis(), cluster, group, by=actor.username, remote_addr=actor.remote_addr,
                                     **options)  # fmt: skip
    except RocketMQError as exc:
        context["error"] = _("the cluster could not be read: %(error)s") % {"error": f"{type(exc).__name__}: {exc}"}
        return None, 502
    return taken, 200


class VerifyForm(forms.Form):
    group = forms.CharField(label=gettext_lazy("Group"), max_length=255)
    client_id = forms.CharField(label=gettext_lazy("Client"), max_length=255,
                                help_text=gettext_lazy("an online client of the group (its client id)"))  # fmt: skip
    reason = forms.CharField(label=gettext_lazy("Reason"), max_length=2000)


def _verify_page(request, cluster, position: dict, *, form=None, status=200):
    """The form, with the chosen group's online clients to pick from (read now)."""
    group = (form.data.get("group") if form is not None else request.GET.get("group", "")) or ""
    context = {"cluster": cluster, "position": position, "nav": "messages", "clients": [],
               "form": form or VerifyForm(initial={"group": group}), "limit": verify.MAX_MESSAGES}  # fmt: skip
    if group and scope_of(request.user).sees_group(cluster.name, group):
        try:
            listed, proxied = run_on_cluster(
                cluster, lambda c: verify.clients_and_proxied(c, group, cluster.proxy_list)
            )
            context["clients"] = listed
            # named with why they cannot be asked, before anyone tries
            context["proxied"] = [(conn, services.VIA_PROXY % {"proxy": proxy}) for proxy, conn in proxied.values()]
        except RocketMQError as exc:
            context["clients_error"] = f"{type(exc).__name__}: {exc}"
    return render(request, "clients/verify.html", context, status=status)


def _position_or_404(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    """The cluster and the message's position; 404 for a topic outside the user's scope, as for
    one that is not there (the message itself is read when the request is made)."""
    found = cluster_or_404(request, cluster)
    try:
        messages.require_topic(found, topic, scope_of(request.user))
    except messages.NoSuchTopic as exc:
        raise Http404(str(exc)) from None
    return found, {"topic": topic, "broker": broker, "queue_id": queue_id, "offset": offset}


@console_page
def verify_form(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    return _verify_page(request, *_position_or_404(request, cluster, topic, broker, queue_id, offset))


@console_action
def verify_create(request, cluster: str, topic: str, broker: str, queue_id: int, offset: int):
    found, position = _position_or_404(request, cluster, topic, broker, queue_id, offset)
    form = VerifyForm(request.POST)
    if not form.is_valid():
        return _verify_page(request, found, position, form=form, status=400)
    data = form.cleaned_data
    if not scope_of(request.user).sees_group(found.name, data["group"]):  # as a group that is not there
        absent = _("no group %(group)s in %(cluster)s") % {"group": data["group"], "cluster": found.name}
        form.add_error("group", absent)
        return _verify_page(request, found, position, form=form, status=404)
    return submit_from(
        form,
        lambda: verify.request_verify(actor=Actor(request.user, remote_addr(request)), cluster=found,
                                      group=data["group"], client_id=data["client_id"], positions=[position],
                                      reason=data["reason"]),
        lambda status: _verify_page(request, found, position, form=form, status=status),
    )  # fmt: skip
