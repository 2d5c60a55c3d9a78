"""A group's subscription config (the brokers' per-group settings: retries, whether it may
consume, orderly, broadcast) read per broker, and changes of it as requests.

Each master broker keeps its own copy of the config, and they can differ (one was edited by
hand, one was added later with defaults). So everything here is per broker: the page shows each
broker's values and flags the fields that differ; a change plans, per broker that has the group,
the values it replaces and the ones it sets; undo sets each broker back to what it had.

Reading uses GET_ALL_SUBSCRIPTIONGROUP_CONFIG, not the single-group request: the broker's
single-group read creates the group when it does not exist and autoCreateSubscriptionGroup is
on, and a read must not create anything.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..changes import notify, workflow
from ..changes import services as changes
from ..changes.guards import Actor, ChangeRefused, require_reason, require_role, require_writable
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST
from ..models import Cluster
from ..rocketmq import AdminClient, RocketMQError


@dataclass(frozen=True)
class Field:
    wire: str  # the broker's JSON name
    kind: type  # bool or int
    low: int = 0
    high: int = 0


# what a request may change; every other field is shown as the broker reports it and kept as is
EDITABLE = {
    f.wire: f
    for f in (
        Field("consumeEnable", bool),
        Field("retryMaxTimes", int, -1, 64),
        Field("consumeMessageOrderly", bool),
        Field("consumeBroadcastEnable", bool),
    )
}
PAUSE, RESUME = {"consumeEnable": False}, {"consumeEnable": True}
NOT_SHOWN = ("groupName", "subscriptionDataSet", "attributes")


def parse_values(raw: dict) -> dict:
    """The fields a request sets, checked: known, of the right type, within bounds."""
    if not isinstance(raw, dict) or not raw:
        raise ChangeRefused(_("say which fields to set"))
    values = {}
    for name, value in raw.items():
        field = EDITABLE.get(name)
        if field is None:
            why = _("%(field)r cannot be changed here; one of %(fields)s")
            raise ChangeRefused(why % {"field": name, "fields": ", ".join(EDITABLE)})
        if field.kind is bool and not isinstance(value, bool):
            raise ChangeRefused(_("%(field)s is true or false") % {"field": name})
        whole = isinstance(value, int) and not isinstance(value, bool)
        if field.kind is int and not (whole and field.low <= value <= field.high):
            raise ChangeRefused(
                _("%(field)s is a whole number from %(low)s to %(high)s")
                % {"field": name, "low": field.low, "high": field.high}
            )
        values[name] = value
    return values


async def read_configs(client: AdminClient, group: str) -> dict:
    """Per master broker: {"config": the group's fields as the broker reports them} (None when
    that broker has no config for it), or {"error": why it could not be read}."""
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()

    async def one(address: str) -> dict:
        try:
            configs = await client.topology.subscription_groups(address)
        except RocketMQError as exc:
            return {"address": address, "error": f"{type(exc).__name__}: {exc}"}
        found = configs.get(group)
        read = {"address": address, "config": dict(found.raw) if found else None}
        try:
            read["modes"] = (await client.topology.request_modes(address)).get(group, {})
        except RocketMQError as exc:
            read["modes_error"] = f"{type(exc).__name__}: {exc}"
        return read

    answers = await asyncio.gather(*(one(a) for a in masters.values()))
    return dict(zip(masters, answers, strict=True))


def read(cluster: Cluster, group: str) -> dict:
    return run_on_cluster(cluster, lambda c: read_configs(c, group), seconds=settings.RESET_PREVIEW_DEADLINE)


def request_modes(brokers: dict, topics: list[str]) -> list[dict]:
    """Per topic (those the group consumes, and any with a mode set) and broker: the message
    request mode, its POP share, and whether it was set or is the broker's default (PULL)."""
    readable = {n: b for n, b in sorted(brokers.items()) if "error" not in b}
    named = sorted(set(topics) | {t for b in readable.values() for t in b.get("modes", {})})
    rows = []
    for topic in named:
        for broker, read in readable.items():
            if "modes_error" in read:
                rows.append({"topic": topic, "broker": broker, "mode": None, "error": read["modes_error"]})
                continue
            mode = read.get("modes", {}).get(topic)
            shown = {"mode": "PULL", "share": None}  # the broker's default
            if mode:
                shown = {"mode": mode["mode"], "share": mode["popShareQueueNum"]}
            rows.append({"topic": topic, "broker": broker, **shown, "explicit": mode is not None})
    return rows


def table(brokers: dict) -> dict:
    """The page's view: one row per field any broker reports, its value per broker, and whether
    the brokers that have the group differ on it."""
    have = {name: b["config"] for name, b in brokers.items() if b.get("config")}
    fields = sorted({k for config in have.values() for k in config if k not in NOT_SHOWN})
    rows = []
    for name in fields:
        values = {broker: _shown(config.get(name)) for broker, config in have.items()}
        rows.append({"field": name, "values": values, "differs": len({repr(v) for v in values.values()}) > 1,
                     "editable": name in EDITABLE})  # fmt: skip
    return {
        "brokers": sorted(have),
        "rows": rows,
        "paused_on": sorted(b for b, c in have.items() if c.get("consumeEnable") is False),
        "missing": sorted(n for n, b in brokers.items() if "config" in b and b["config"] is None),
        "unreadable": [{"broker": n, "reason": b["error"]} for n, b in sorted(brokers.items()) if "error" in b],
    }


def _shown(value):
    """A nested value (5.x's groupRetryPolicy: its type and its policy's intervals) as compact
    JSON with its keys in order, so two brokers' copies compare as the text shown."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return value


def plan(cluster: Cluster, group: str, targets: dict[str, dict] | dict) -> dict:
    """Per broker that has the group: the values replaced and the values set. `targets` is one
    set of values for every broker, or {"per_broker": {broker: values}} (an undo)."""
    brokers = read(cluster, group)
    per_broker = targets.get("per_broker")
    rows, unreadable = [], []
    for name, found in sorted(brokers.items()):
        if "error" in found:
            unreadable.append({"broker": name, "reason": found["error"]})
            continue
        wanted = per_broker.get(name) if per_broker is not None else targets
        if found["config"] is None or not wanted:
            continue  # the group is not on this broker (an undo: it was not changed there)
        before = {k: found["config"].get(k) for k in wanted}
        rows.append({"broker": name, "address": found["address"], "before": before, "after": dict(wanted),
                     "changes": sorted(k for k in wanted if before[k] != wanted[k])})  # fmt: skip
    if not rows and not unreadable:
        raise ChangeRefused(_("no broker has a subscription config for group %(group)s") % {"group": group}, 404)
    changes = sum(len(r["changes"]) for r in rows)
    if not changes and not unreadable:
        raise ChangeRefused(_("every broker already has these values: nothing to change"))
    return {"brokers": rows, "unreadable": unreadable, "totals": {"brokers": len(rows), "changes": changes}}


def request_change(*, actor: Actor, cluster: Cluster, group: str, values: dict, reason: str,
                   emergency: bool = False, undo_of: ChangeRequest | None = None,
                   per_broker: dict | None = None) -> ChangeRequest:  # fmt: skip
    require_role(actor, REQUEST, _("changing a subscription config"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    require_reason(reason)
    if per_broker is None:
        values = parse_values(values)
        params = {"set": values}
    else:
        params = {"per_broker": per_broker}
    if emergency and not (settings.CHANGES_EMERGENCY_PAUSE and params.get("set") == PAUSE):
        why = _("only a pause may run without a second approver, and only where CHANGES_EMERGENCY_PAUSE is on")
        raise ChangeRefused(why, 403)
    found = plan(cluster, group, params if per_broker is not None else values)
    request = workflow.submit(actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.CONFIG,
                              params=params, plan=found, reason=reason, undo_of=undo_of)  # fmt: skip
    if emergency:
        because = gettext_noop("emergency pause (CHANGES_EMERGENCY_PAUSE)")
        return changes.approve_alone(request, actor=actor, because=because)
    notify.new_request(request)
    return request


def effect_changed(request: ChangeRequest) -> str | None:
    """At approval: a refusal when a broker's values of the changed fields are no longer the
    ones the plan replaces (someone edited them since: the approver would approve a different
    change)."""
    try:
        brokers = read(request.cluster, request.group)
    except RocketMQError as exc:
        return _("the config could not be read again (%(error)s)") % {"error": exc}
    moved = moved_since(request, brokers)
    if moved:
        return _("the config changed since the plan (%(what)s): refresh it, then approve") % {
            "what": "; ".join(m["label"] + ": " + m["note"] for m in moved)
        }
    return None


def moved_since(request: ChangeRequest, brokers: dict | None = None) -> list[dict]:
    brokers = brokers if brokers is not None else read(request.cluster, request.group)
    moved = []
    for row in request.plan["brokers"]:
        config = (brokers.get(row["broker"]) or {}).get("config")
        if config is None:
            moved.append({"label": row["broker"], "note": _("unreadable or gone")})
            continue
        for field, before in row["before"].items():
            if config.get(field) != before:
                moved.append({"label": f"{row['broker']} {field}", "note": f"{before} → {config.get(field)}"})
    return moved


def refresh(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    targets = request.params if "per_broker" in request.params else request.params["set"]
    return workflow.replan(request, actor=actor, plan=plan(request.cluster, request.group, targets))


def undo(request: ChangeRequest, *, actor, reason: str = "") -> ChangeRequest:
    """A new request setting each broker back to the values the run replaced there."""
    replaced = (request.result or {}).get("replaced") or {}
    applied = (request.result or {}).get("applied") or {}
    back = {broker: values for broker, values in replaced.items() if broker in applied}
    if not back:
        raise ChangeRefused(_("nothing was applied: there is nothing to undo"))
    return request_change(actor=actor, cluster=request.cluster, group=request.group, values={},
                          reason=reason or f"undo of #{request.pk}", undo_of=request, per_broker=back)  # fmt: skip
