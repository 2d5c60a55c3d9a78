"""Carry out an approved switch between POP and PULL once, then read the modes back.

Claimed like every change (consumers/jobs/claims.py). The mode each broker had is recorded before
the first write, and a take-over keeps that first reading, so an undo sets back what was there.
Writing a mode is idempotent: a broker written but not recorded before a crash is written again.
"""

from __future__ import annotations

import json

from django.utils.translation import gettext_noop

from ..changes import runs
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..languages.evidence import register_formats
from ..rocketmq import RocketMQError
from ..rocketmq.codes import RequestCode
from .modes import read

HOLDS_MODE = gettext_noop("hands out messages so")
HOLDS_OTHER_MODE = gettext_noop("hands them out otherwise")
register_formats(HOLDS_MODE, HOLDS_OTHER_MODE)


def execute_mode(request_id: int) -> ChangeRequest | None:
    """Run the request if approved, or take it over if its worker died; None: another has it."""
    claimed = runs.claim(request_id, done="applied")
    return None if claimed is None else _run(*claimed)


def _run(request: ChangeRequest, token: str) -> ChangeRequest:
    result = {"replaced": {}, "applied": {}, "failed": {}, **request.result}
    rows, topic, group = request.plan["brokers"], request.params["topic"], request.group
    try:
        brokers = read(request.cluster, group, topic)["brokers"]
        for row in rows:
            now = brokers.get(row["broker"]) or {"error": "not a master broker of the cluster any more"}
            if row["broker"] in result["replaced"] or row["broker"] in result["failed"]:
                continue
            if "error" in now:
                result["failed"][row["broker"]] = now["error"]
            else:
                result["replaced"][row["broker"]] = {k: now[k] for k in ("mode", "share", "explicit")}
        runs.save(request, token, result)  # what each broker had, before anything is written
        for row in rows:
            if row["broker"] not in result["replaced"] or row["broker"] in result["applied"]:
                continue
            error = run_on_cluster(request.cluster, lambda c, r=row: _write(c, group, topic, r), mutation=True)
            if error is None:
                result["applied"][row["broker"]] = row["after"]
            else:
                result["failed"][row["broker"]] = error
            runs.save(request, token, result)
        back = read(request.cluster, group, topic)
        result["read_back"] = {b: _check(after, back["brokers"].get(b) or {}) for b, after in result["applied"].items()}
        result["clients"] = back["clients"]
    except RocketMQError as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    summary = {"before": result["replaced"], "after": result["applied"]}
    return runs.finish(request, token, result, done="applied", summary=summary)


async def _write(client, group: str, topic: str, row: dict) -> str | None:
    body = {"topic": topic, "consumerGroup": group, "mode": row["after"]["mode"],
            "popShareQueueNum": row["after"]["share"] or 0}  # fmt: skip
    try:
        await client.remoting.call(row["address"], RequestCode.SET_MESSAGE_REQUEST_MODE, body=json.dumps(body).encode())
    except RocketMQError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _check(after: dict, found: dict) -> dict:
    if "error" in found or not found:
        return {"ok": False, "mode": None, "note": found.get("error", "unreadable")}
    ok = found["mode"] == after["mode"] and (after["mode"] == "PULL" or found["share"] == after["share"])
    return {"ok": ok, "mode": found["mode"], "share": found["share"], "note": HOLDS_MODE if ok else HOLDS_OTHER_MODE}
