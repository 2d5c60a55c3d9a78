"""Consumption verification: deliver stored messages (up to 10) to one chosen online client of a
group and keep what the client answered, to check a fix before a redrive.

The storing broker relays CONSUME_MESSAGE_DIRECTLY to the client, which runs its listener on the
message and answers its result (CR_SUCCESS, CR_LATER, CR_THROW_EXCEPTION, ...), a remark (for an
exception: what it threw) and the time spent. The client consumes the message again, so this is
a change: requested, approved by someone else, audited, and each message delivered at most once
(a run taken over does not ask again for a message it was asking when its worker stopped: the
client may have run it, and it says so). Nothing on the broker changes.

The client must be online in the group as a broker knows it: a client only a proxy knows (a
RocketMQ 5 gRPC client) cannot be reached by this request in cluster mode, and is refused with
why before anyone asks (services.VIA_PROXY).
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..changes import notify, workflow
from ..changes.guards import Actor, ChangeRefused, require_reason, require_role, require_writable
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST, scope_of
from ..languages.evidence import register_formats
from ..messages import services as messages
from ..models import Cluster
from ..rocketmq import AdminClient, ConsumerNotOnline, RocketMQError
from ..web.apischema import JAVA_LONG_MAX, Int, List, Obj, Str
from . import services

MAX_MESSAGES = 10
POSITION = Obj({"topic": Str(max_length=255, required=True), "broker": Str(max_length=255, required=True),
                "queue_id": Int(0, 65535), "offset": Int(0, JAVA_LONG_MAX)},
               required=("topic", "broker", "queue_id", "offset"))  # fmt: skip
API_PARAMS = Obj({"client_id": Str(max_length=255, required=True),
                  "messages": List(POSITION, max_items=MAX_MESSAGES)}, required=("client_id", "messages"))  # fmt: skip
NOT_ASKED_AGAIN = gettext_noop("the worker stopped while the client was asked: not asked again (it may have run it)")
register_formats(NOT_ASKED_AGAIN)


async def online_clients(client: AdminClient, group: str) -> list:
    """The group's clients as the first master that knows any lists them (all see the same)."""
    for address in (await client.topology.cluster_info(max_age=5.0)).masters().values():
        try:
            return (await client.progress.consumer_connection(group, address)).connections
        except ConsumerNotOnline:
            continue
    return []


async def clients_and_proxied(client: AdminClient, group: str, proxies: list[str]) -> tuple[list, dict]:
    """The clients a broker lists, and those only a proxy knows ({client id: (proxy, connection)})."""
    listed = await online_clients(client, group)
    if not proxies:
        return listed, {}
    proxied, _unread = await services.proxy_only(client, group, proxies, {c.client_id for c in listed})
    return listed, proxied


def _client(cluster: Cluster, group: str, client_id: str) -> dict:
    listed, proxied = run_on_cluster(cluster, lambda c: clients_and_proxied(c, group, cluster.proxy_list))
    found = next((c for c in listed if c.client_id == client_id), None)
    if found is None and client_id in proxied:
        raise ChangeRefused(_(services.VIA_PROXY) % {"proxy": proxied[client_id][0]}, 409)
    if found is None:
        raise ChangeRefused(
            _("%(client)s is not an online client of %(group)s: only a client online now can be asked")
            % {"client": client_id, "group": group},
            409,
        )
    return {"client_id": found.client_id, "address": found.client_addr, "language": found.language,
            "version": found.version_name}  # fmt: skip


def plan_verify(actor: Actor, cluster: Cluster, group: str, client_id: str, positions: list[dict]) -> dict:
    if not 1 <= len(positions) <= MAX_MESSAGES:
        raise ChangeRefused(_("verify 1 to %(max)s messages at a time") % {"max": MAX_MESSAGES})
    scope = scope_of(actor.user)  # a message on a topic outside it is as one that is not there
    rows = []
    for p in positions:
        try:
            found = messages.message(cluster, p["topic"], p["broker"], p["queue_id"], p["offset"], scope)
        except (messages.MessageNotFound, messages.NoSuchTopic) as exc:
            raise ChangeRefused(str(exc), 404) from None
        m = found.message
        rows.append({"label": f"{m.topic}@{found.broker}#{m.queue_id}:{m.queue_offset}", "topic": m.topic,
                     "broker": found.broker, "queue_id": m.queue_id, "offset": m.queue_offset, "msg_id": m.msg_id,
                     "offset_msg_id": m.offset_msg_id, "keys": m.keys, "tags": m.tags})  # fmt: skip
    return {"client": _client(cluster, group, client_id), "messages": rows, "totals": {"messages": len(rows)}}


def request_verify(*, actor: Actor, cluster: Cluster, group: str, client_id: str, positions: list[dict],
                   reason: str) -> ChangeRequest:  # fmt: skip
    require_role(actor, REQUEST, _("verifying consumption"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    require_reason(reason)
    found = plan_verify(actor, cluster, group, client_id, positions)
    params = {"client_id": client_id, "messages": [{k: r[k] for k in ("topic", "broker", "queue_id", "offset")}
                                                   for r in found["messages"]]}  # fmt: skip
    request = workflow.submit(actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.VERIFY,
                              params=params, plan=found, reason=reason)  # fmt: skip
    notify.new_request(request)
    return request


def effect_changed(request: ChangeRequest) -> str | None:
    """At approval: the client must still be online (else the approver would approve nothing)."""
    try:
        _client(request.cluster, request.group, request.params["client_id"])
    except ChangeRefused as exc:
        return str(exc)
    except RocketMQError as exc:
        return _("the group's clients could not be read (%(error)s)") % {"error": exc}
    return None
