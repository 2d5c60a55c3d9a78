"""Switching how the brokers hand a group its messages on one topic, POP or PULL (RIP-19, what
`mqadmin setConsumeMode` does), as a change request.

The plan reads, per master broker, the mode set for the group and topic (or the broker's default,
PULL) and lists the group's online clients with whether they can follow the switch: a remoting
client pops only from 5.0 on and only when it asks the broker for its queues (clientRebalance
false); an older one keeps pulling the queues it holds, beside the poppers. The run writes every
master (SET_MESSAGE_REQUEST_MODE) and reads the modes back; undo sets each broker back to the mode
it had (PULL, the default, is then set explicitly: a broker cannot forget a mode).
"""

from __future__ import annotations

import asyncio

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..changes import notify, workflow
from ..changes.guards import Actor, ChangeRefused, require_reason, require_role, require_writable
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST
from ..languages.evidence import register_formats
from ..models import Cluster
from ..rocketmq import AdminClient, ConsumerNotOnline, RocketMQError
from ..rocketmq.codes import version_ordinal

MODES = ("POP", "PULL")
SHARE_RANGE = (1, 64)  # popShareQueueNum: how many clients share a queue (mqadmin's default is 8)
V5 = version_ordinal("V5_0_0")
CAN_POP = gettext_noop("5.0 or later: pops when it asks the broker for its queues (clientRebalance false)")
CANNOT_POP = gettext_noop("before 5.0: keeps pulling the queues it holds, beside the poppers")
NOT_JAVA = gettext_noop("not a Java remoting client: whether it pops depends on its SDK")
register_formats(CAN_POP, CANNOT_POP, NOT_JAVA)


async def read_modes(client: AdminClient, group: str, topic: str) -> dict:
    """{"brokers": per master broker {"address", "mode", "share", "explicit"} or {"error"},
    "clients": the group's online clients as the first broker that knows them lists them}."""
    await client.topology.topic_route(topic)  # TopicNotFound when there is no such topic
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()

    async def one(address: str) -> dict:
        try:
            mode = (await client.topology.request_modes(address)).get(group, {}).get(topic)
        except RocketMQError as exc:
            return {"address": address, "error": f"{type(exc).__name__}: {exc}"}
        if mode is None:
            return {"address": address, "mode": "PULL", "share": None, "explicit": False}
        return {"address": address, "mode": mode["mode"], "share": mode["popShareQueueNum"], "explicit": True}

    answers = await asyncio.gather(*(one(a) for a in masters.values()))
    clients = []
    for address in masters.values():
        try:
            clients = (await client.progress.consumer_connection(group, address)).connections
            break
        except (ConsumerNotOnline, RocketMQError):
            continue
    return {"brokers": dict(zip(masters, answers, strict=True)), "clients": [_verdict(c) for c in clients]}


def _verdict(connection) -> dict:
    if connection.language != "JAVA":
        pops, note = None, NOT_JAVA
    else:
        pops = connection.version >= V5
        note = CAN_POP if pops else CANNOT_POP
    return {"client_id": connection.client_id, "language": connection.language,
            "version": connection.version_name, "pops": pops, "note": note}  # fmt: skip


def read(cluster: Cluster, group: str, topic: str) -> dict:
    return run_on_cluster(cluster, lambda c: read_modes(c, group, topic), seconds=settings.RESET_PREVIEW_DEADLINE)


def check(mode: str, share: int | None) -> dict:
    if mode not in MODES:
        raise ChangeRefused(_("the mode is POP or PULL"))
    low, high = SHARE_RANGE
    if mode == "POP" and not (isinstance(share, int) and not isinstance(share, bool) and low <= share <= high):
        raise ChangeRefused(
            _("popShareQueueNum is a whole number from %(low)s to %(high)s") % {"low": low, "high": high}
        )
    return {"mode": mode, "share": share if mode == "POP" else None}


def plan(cluster: Cluster, group: str, topic: str, targets: dict) -> dict:
    """`targets`: one {"mode", "share"} for every broker, or {"per_broker": {broker: it}} (an undo)."""
    found = read(cluster, group, topic)
    per_broker = targets.get("per_broker")
    rows, unreadable = [], []
    for name, now in sorted(found["brokers"].items()):
        if "error" in now:
            unreadable.append({"broker": name, "reason": now["error"]})
            continue
        wanted = per_broker.get(name) if per_broker is not None else targets
        if not wanted:
            continue
        before = {k: now[k] for k in ("mode", "share", "explicit")}
        after = {"mode": wanted["mode"], "share": wanted["share"]}
        rows.append({"broker": name, "address": now["address"], "before": before, "after": after,
                     "changes": (before["mode"], before["share"]) != (after["mode"], after["share"])})  # fmt: skip
    if not rows and not unreadable:
        raise ChangeRefused(_("no master broker could be read"), 502)
    if not any(r["changes"] for r in rows) and not unreadable:
        raise ChangeRefused(_("every broker already hands this group its messages so: nothing to change"))
    return {"topic": topic, "brokers": rows, "clients": found["clients"], "unreadable": unreadable,
            "totals": {"brokers": len(rows), "changes": sum(r["changes"] for r in rows)}}  # fmt: skip


def request_mode(*, actor: Actor, cluster: Cluster, group: str, topic: str, mode: str, share: int | None = None,
                 reason: str, undo_of: ChangeRequest | None = None,
                 per_broker: dict | None = None) -> ChangeRequest:  # fmt: skip
    require_role(actor, REQUEST, _("switching a group between POP and PULL"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    require_reason(reason)
    params = {"topic": topic, **(check(mode, share) if per_broker is None else {"per_broker": per_broker})}
    try:
        found = plan(cluster, group, topic, params if per_broker is not None else check(mode, share))
    except RocketMQError as exc:
        if type(exc).__name__ == "TopicNotFound":
            raise ChangeRefused(_("no topic %(topic)s in %(cluster)s") % {"topic": topic, "cluster": cluster.name},
                                404) from exc  # fmt: skip
        raise
    request = workflow.submit(actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.MODE,
                              params=params, plan=found, reason=reason, undo_of=undo_of)  # fmt: skip
    notify.new_request(request)
    return request


def _targets(request: ChangeRequest) -> dict:
    params = request.params
    return {"per_broker": params["per_broker"]} if "per_broker" in params else check(params["mode"], params["share"])


def refresh(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    found = plan(request.cluster, request.group, request.params["topic"], _targets(request))
    return workflow.replan(request, actor=actor, plan=found)


def moved_since(request: ChangeRequest) -> list[dict]:
    found = read(request.cluster, request.group, request.params["topic"])["brokers"]
    moved = []
    for row in request.plan["brokers"]:
        now = found.get(row["broker"]) or {"error": "gone"}
        if "error" in now:
            moved.append({"label": row["broker"], "note": _("unreadable")})
        elif (now["mode"], now["share"]) != (row["before"]["mode"], row["before"]["share"]):
            moved.append({"label": row["broker"], "note": f"{row['before']['mode']} → {now['mode']}"})
    return moved


def effect_changed(request: ChangeRequest) -> str | None:
    try:
        moved = moved_since(request)
    except RocketMQError as exc:
        return _("the modes could not be read again (%(error)s)") % {"error": exc}
    if moved:
        what = "; ".join(f"{m['label']}: {m['note']}" for m in moved)
        return _("the mode changed since the plan (%(what)s): refresh it, then approve") % {"what": what}
    return None


def undo(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    replaced = (request.result or {}).get("replaced") or {}
    applied = (request.result or {}).get("applied") or {}
    back = {b: {"mode": v["mode"], "share": v["share"]} for b, v in replaced.items() if b in applied}
    if not back:
        raise ChangeRefused(_("nothing was applied: there is nothing to undo"))
    return request_mode(actor=actor, cluster=request.cluster, group=request.group, topic=request.params["topic"],
                        mode="", reason=reason or f"undo of #{request.pk}", undo_of=request,
                        per_broker=back)  # fmt: skip
