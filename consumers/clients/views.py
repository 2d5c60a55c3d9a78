"""The clients of a group as they see themselves: the list with each one's running info, one
client's page, and the stacks of every client captured on demand and clustered."""

from __future__ import annotations

import time

from django.shortcuts import render
from django.utils.translation import gettext as _

from .. import audit
from ..changes.guards import Actor, ChangeRefused, require_role
from ..identity import REQUEST, cluster_or_404, console_action, console_page, remote_addr, scope_of
from ..jobs.redis_client import get_redis
from ..rocketmq import RocketMQError
from . import services, stacks


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
    actor = Actor(request.user, remote_addr(request))
    context = {"cluster": found, "group": group, "nav": "groups"}
    try:
        require_role(actor, REQUEST, _("capturing stacks"), _("operator"), cluster=found, group=group)
    except ChangeRefused as exc:
        context["error"] = str(exc)
        return render(request, "clients/group.html", context, status=exc.status)
    if not services.capture_allowed(get_redis(), found, group):
        context["error"] = _("the group's stacks were captured less than %(seconds)s s ago: try again shortly") % {
            "seconds": services.CAPTURE_EVERY
        }
        return render(request, "clients/group.html", context, status=429)
    clients, error = _read(found, group, jstack=True)
    context.update(clients=clients, error=error)
    if clients is None:
        services.capture_failed(get_redis(), found, group)
    if clients is not None:
        parsed = {c.client_id: stacks.parse(c.info.jstack if c.info else None) for c in clients.clients}
        reading = stacks.cluster({client: threads for client, (threads, _cut) in parsed.items()}, group)
        context["reading"] = reading
        context["cut"] = sorted(client for client, (_threads, cut) in parsed.items() if cut)
        context["captured"] = True
        services.keep_capture(get_redis(), found, group, at=time.time(), by=actor.username, reading=reading,
                              threads=reading.threads)  # fmt: skip
        _kept(context, found, group)
        audit.record("capture_stacks", username=actor.username, remote_addr=actor.remote_addr, cluster=found.name,
                     group=group, details={"clients": len(clients.clients),
                                           "answered": sum(1 for c in clients.clients if c.info)})  # fmt: skip
    return render(request, "clients/group.html", context, status=502 if error else 200)
