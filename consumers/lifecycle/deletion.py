"""Deleting a consumer group, and restoring one deleted, as requests of the change workflow.

A delete removes, on every master broker, the group's subscription config and every offset it
has committed there (DELETE_SUBSCRIPTIONGROUP with cleanOffset: what `mqadmin deleteSubGroup -r
true` does). The plan reads, per broker, the config and the committed offsets exactly (each queue
of each topic the broker says the group has offsets for, asked without the broker's "0 when none"
answer), so the run's snapshot and an undo hold what was there and nothing more. It names what
stops when the group goes: the enabled alert rules that watch it and the teams whose grants name
it. It is refused while any client of the group is online, at request time and again at run time.

RocketMQ has no request that removes one topic's offsets of a group (the broker's offset manager
drops a topic's offsets for every group, or a group's for every topic), so the console does not
offer it rather than fake it with a reset.

An undo is a restore request: it recreates each broker's config as the delete's run found it and
writes the offsets back, approved like any change; a broker where the group has since been
recreated with a config or offsets of its own is left alone and named.
"""

from __future__ import annotations

import asyncio

from django.conf import settings
from django.utils.translation import gettext as _

from ..changes import notify, workflow
from ..changes.guards import Actor, ChangeRefused, require_reason, require_role, require_writable
from ..changes.models import ChangeRequest, State
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST, teams_covering
from ..models import Cluster
from ..rocketmq import AdminClient, ConsumerNotOnline, NotFound, RocketMQError
from ..rocketmq.models import MessageQueue
from .abandoned import watching_rules


async def read_group(client: AdminClient, group: str) -> dict[str, dict]:
    """Per master broker: its address, the group's config there (raw, None when absent), its
    committed offsets ({"topic@broker#queue": offset}), the ids of its clients online there; or
    {"error": why} when the broker could not be read."""
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()

    async def one(broker: str, address: str) -> dict:
        try:
            configs = await client.topology.subscription_groups(address)
            try:
                online = [c.client_id for c in (await client.progress.consumer_connection(group, address)).connections]
            except ConsumerNotOnline:
                online = []
            try:
                topics = await client.progress.topics_of_group(group, address)
            except NotFound:
                topics = []
            queues = await client.topology.topic_configs(address) if topics else {}
            targets = [(group, MessageQueue(t, broker, q), address) for t in topics if t in queues
                       for q in range(queues[t].read_queue_nums)]  # fmt: skip
            found = await client.progress.consumer_offsets_many(targets)
        except RocketMQError as exc:
            return {"address": address, "error": f"{type(exc).__name__}: {exc}"}
        errors = [f for f in found if isinstance(f, RocketMQError)]
        if errors:
            return {"address": address, "error": f"{type(errors[0]).__name__}: {errors[0]}"}
        config = configs.get(group)
        offsets = {_label(mq): offset for (_, mq, _), offset in zip(targets, found, strict=True) if offset is not None}
        return {"address": address, "config": dict(config.raw) if config else None, "offsets": offsets,
                "online": online}  # fmt: skip

    answers = await asyncio.gather(*(one(name, address) for name, address in masters.items()))
    return dict(zip(masters, answers, strict=True))


def _label(mq: MessageQueue) -> str:
    return f"{mq.topic}@{mq.broker_name}#{mq.queue_id}"


def parse_label(label: str) -> MessageQueue:
    topic, _, rest = label.rpartition("@")
    broker, _, queue = rest.rpartition("#")
    return MessageQueue(topic, broker, int(queue))


def _row(broker: str, config: dict | None, offsets: dict[str, int], **more) -> dict:
    topics = sorted({parse_label(label).topic for label in offsets})
    return {"broker": broker, **more, "config": config, "offsets": offsets, "topics": topics}


def read(cluster: Cluster, group: str) -> dict[str, dict]:
    return run_on_cluster(cluster, lambda c: read_group(c, group), seconds=settings.RESET_PREVIEW_DEADLINE)


def online_clients(brokers: dict[str, dict]) -> list[str]:
    return sorted({c for b in brokers.values() for c in b.get("online", [])})


def plan_delete(cluster: Cluster, group: str) -> dict:
    brokers = read(cluster, group)
    online = online_clients(brokers)
    if online:
        raise ChangeRefused(
            _("%(group)s has %(count)s client(s) online (%(clients)s): a group in use is not deleted")
            % {"group": group, "count": len(online), "clients": ", ".join(online[:5])},
            409,
        )
    rows = [_row(name, b["config"], b["offsets"], address=b["address"])
            for name, b in sorted(brokers.items()) if "error" not in b and (b["config"] or b["offsets"])]  # fmt: skip
    unreadable = [{"broker": name, "reason": b["error"]} for name, b in sorted(brokers.items()) if "error" in b]
    if not rows and not unreadable:
        raise ChangeRefused(_("no broker has a config or offsets of group %(group)s") % {"group": group}, 404)
    return {
        "brokers": rows,
        "unreadable": unreadable,
        "stops": {"alert_rules": watching_rules(cluster, group), "teams": teams_covering(cluster.name, group)},
        "totals": {"brokers": len(rows), "offsets": sum(len(r["offsets"]) for r in rows)},
    }


def request_delete(*, actor: Actor, cluster: Cluster, group: str, reason: str) -> ChangeRequest:
    require_role(actor, REQUEST, _("deleting a group"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    require_reason(reason)
    found = plan_delete(cluster, group)
    request = workflow.submit(actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.DELETE,
                              params={}, plan=found, reason=reason)  # fmt: skip
    notify.new_request(request)
    return request


def refresh_delete(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    return workflow.replan(request, actor=actor, plan=plan_delete(request.cluster, request.group))


def undo_delete(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    """A restore request: each broker's config and offsets as the delete's run found them."""
    deleted = (request.result or {}).get("done") or []
    snapshot = {b: s for b, s in ((request.result or {}).get("snapshot") or {}).items() if b in deleted}
    if not snapshot:
        raise ChangeRefused(_("nothing was deleted: there is nothing to undo"))
    require_role(actor, REQUEST, _("restoring a group"), "operator", cluster=request.cluster, group=request.group)
    require_writable(request.cluster)
    rows = [_row(b, s["config"], s["offsets"]) for b, s in sorted(snapshot.items())]
    found = {"brokers": rows, "unreadable": [],
             "totals": {"brokers": len(rows), "offsets": sum(len(r["offsets"]) for r in rows)}}  # fmt: skip
    restore = workflow.submit(actor=actor, cluster=request.cluster, group=request.group,
                              kind=ChangeRequest.Kind.RESTORE, params={"restore_of": request.pk}, plan=found,
                              reason=reason or f"undo of #{request.pk}", undo_of=request)  # fmt: skip
    notify.new_request(restore)
    return restore


def effect_changed(request: ChangeRequest) -> str | None:
    """At approval of a delete: a client came online since the plan (refused), or the offsets
    moved (a refresh first, so the approver approves what will go)."""
    if request.kind != ChangeRequest.Kind.DELETE or request.state != State.PENDING:
        return None
    try:
        brokers = read(request.cluster, request.group)
    except RocketMQError as exc:
        return _("the group could not be read again (%(error)s)") % {"error": exc}
    online = online_clients(brokers)
    if online:
        return _("a client of the group is online now (%(clients)s)") % {"clients": ", ".join(online[:5])}
    moved = [row["broker"] for row in request.plan["brokers"]
             if (brokers.get(row["broker"]) or {}).get("offsets") != row["offsets"]]  # fmt: skip
    if moved:
        return _("the offsets changed since the plan on %(brokers)s: refresh it, then approve") % {
            "brokers": ", ".join(moved)
        }
    return None


def moved_since(request: ChangeRequest) -> list[dict]:
    brokers = read(request.cluster, request.group)
    moved = []
    for row in request.plan["brokers"]:
        now = brokers.get(row["broker"]) or {}
        if "error" in now:
            moved.append({"label": row["broker"], "note": _("unreadable")})
            continue
        for label, offset in sorted(row["offsets"].items()):
            if now.get("offsets", {}).get(label) != offset:
                moved.append({"label": label, "note": f"{offset} → {now.get('offsets', {}).get(label)}"})
    return moved
