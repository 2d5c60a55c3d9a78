"""Carry out an approved group deletion or restore once, then read the brokers back.

Claimed like every change (approved -> running with the run's token; a silent worker's run is
taken over: consumers/jobs/claims.py). A delete records each broker's config and offsets, as read
at run time, before the first broker is touched, and a take-over keeps that first reading: the
snapshot an undo restores is what was there, never a half-deleted state. Deleting is idempotent,
so a broker deleted but not recorded before a crash is deleted again.

Both refuse to go on when the brokers disagree with the plan in a way that matters: a delete when
a client of the group is online (it started between approval and run), a restore on a broker
where the group has since come back with a config or offsets of its own.
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

from ..changes import runs
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..languages.evidence import register_formats
from ..rocketmq import RocketMQError
from ..rocketmq.models import SubscriptionGroupConfig
from .deletion import online_clients, parse_label, read

# the run's notes, in English in the result (the page shows them translated: languages/evidence.py)
CLIENT_ONLINE = gettext_noop("a client of the group came online before the run: not deleted")
RECREATED = gettext_noop("the group came back here since, with a config or offsets of its own: left as it is")
GONE = gettext_noop("config and offsets gone")
LEFT = gettext_noop("still has a config or offsets")
RESTORED = gettext_noop("config and offsets as before the delete")
DIFFERS = gettext_noop("differs from before the delete")
NOT_MASTER = gettext_noop("not a master broker of the cluster any more")
register_formats(CLIENT_ONLINE, RECREATED, GONE, LEFT, RESTORED, DIFFERS, NOT_MASTER)


def execute_lifecycle(request_id: int) -> ChangeRequest | None:
    """Run the request if approved, or take it over if its worker died; None: another has it."""
    claimed = runs.claim(request_id, done="done")
    if claimed is None:
        return None
    request, token = claimed
    run = _delete if request.kind == ChangeRequest.Kind.DELETE else _restore
    result = {"snapshot": {}, "done": [], "failed": {}, **request.result}
    try:
        run(request, token, result)
        back = read(request.cluster, request.group)
        result["read_back"] = {b: _check(request, b, back.get(b) or {}) for b in result["done"]}
    except RocketMQError as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    # the audit's before and after: what each broker held (the delete's snapshot, a restore's plan)
    before = result["snapshot"] if request.kind == ChangeRequest.Kind.DELETE else {}
    after = {}
    if request.kind == ChangeRequest.Kind.RESTORE:
        after = {r["broker"]: {"config": r["config"], "offsets": r["offsets"]} for r in request.plan["brokers"]
                 if r["broker"] in result["done"]}  # fmt: skip
    return runs.finish(request, token, result, done="done", summary={"before": before, "after": after})


def _delete(request: ChangeRequest, token: str, result: dict) -> None:
    brokers = read(request.cluster, request.group)
    online = online_clients(brokers)
    for row in request.plan["brokers"]:
        name = row["broker"]
        if name in result["done"] or name in result["failed"]:
            continue
        now = brokers.get(name) or {"error": NOT_MASTER}
        if online:
            result["failed"][name] = CLIENT_ONLINE
            result["online"] = online
        elif "error" in now:
            result["failed"][name] = now["error"]
        else:
            result["snapshot"].setdefault(name, {"address": now["address"], "config": now["config"],
                                                 "offsets": now["offsets"]})  # fmt: skip
    runs.save(request, token, result)  # the snapshot, before anything is deleted
    for name, taken in sorted(result["snapshot"].items()):
        if name in result["done"] or name in result["failed"]:
            continue
        error = run_on_cluster(request.cluster, lambda c, a=taken["address"]: _delete_on(c, request.group, a),
                               mutation=True)  # fmt: skip
        if error is None:
            result["done"].append(name)
        else:
            result["failed"][name] = error
        runs.save(request, token, result)


async def _delete_on(client, group: str, address: str) -> str | None:
    try:
        await client.actions.delete_subscription_group(group, address, clean_offset=True)
    except RocketMQError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _restore(request: ChangeRequest, token: str, result: dict) -> None:
    brokers = read(request.cluster, request.group)
    result.setdefault("started", [])
    for row in request.plan["brokers"]:
        name = row["broker"]
        if name in result["done"] or name in result["failed"]:
            continue
        now = brokers.get(name) or {"error": NOT_MASTER}
        if "error" in now:
            result["failed"][name] = now["error"]
            continue
        # a broker this run began writing (a take-over) holds our own writes, not a recreated group
        if name not in result["started"] and (now["config"] is not None or now["offsets"]):
            result["failed"][name] = RECREATED
            continue
        result["started"].append(name)
        runs.save(request, token, result)
        error = run_on_cluster(request.cluster, lambda c, r=row, a=now["address"]: _restore_on(c, request.group, r, a),
                               mutation=True)  # fmt: skip
        if error is None:
            result["done"].append(name)
        else:
            result["failed"][name] = error
        runs.save(request, token, result)


async def _restore_on(client, group: str, row: dict, address: str) -> str | None:
    try:
        if row["config"] is not None:
            config = SubscriptionGroupConfig.from_wire(row["config"])
            await client.actions.create_or_update_subscription_group(config, [address])
        for label, offset in sorted(row["offsets"].items()):
            await client.actions.update_consumer_offset(group, parse_label(label), offset)
    except RocketMQError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _check(request: ChangeRequest, broker: str, found: dict) -> dict:
    if "error" in found:
        return {"ok": False, "note": found["error"]}
    if request.kind == ChangeRequest.Kind.DELETE:
        ok = found.get("config") is None and not found.get("offsets")
        return {"ok": ok, "note": GONE if ok else LEFT, "offsets_left": len(found.get("offsets") or {})}
    row = next(r for r in request.plan["brokers"] if r["broker"] == broker)
    ok = found.get("offsets") == row["offsets"] and (found.get("config") is None) == (row["config"] is None)
    return {"ok": ok, "note": RESTORED if ok else DIFFERS, "offsets": found.get("offsets")}
