"""Carry out an approved subscription config change once, then read it back.

Claimed like every change (approved -> running with the run's token; a silent worker's run is
taken over: consumers/jobs/claims.py). The values each broker had are recorded for every broker
before the first write, and a take-over keeps that first reading, so an undo restores what was
there before the change, never the change itself. Writing a config is idempotent: a broker
written but not recorded before a crash is written again with the same values.

Each write is a read-modify-write of that broker's whole config: the fields the console does
not know keep the values that broker has. Brokers are written one by one; one that cannot be
reached is named and the others go on (partial).
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

from ..changes import runs
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..languages.evidence import register_formats
from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import SubscriptionGroupConfig
from .services import read_configs


def execute_config(request_id: int) -> ChangeRequest | None:
    """Run the request if approved, or take it over if its worker died; None: another has it."""
    claimed = runs.claim(request_id, done="applied")
    return None if claimed is None else _run(*claimed)


def _run(request: ChangeRequest, token: str) -> ChangeRequest:
    result = dict(request.result)
    result.setdefault("replaced", {})
    result.setdefault("applied", {})
    result.setdefault("failed", {})
    rows = request.plan["brokers"]
    try:
        brokers = run_on_cluster(request.cluster, lambda c: read_configs(c, request.group))
        for row in rows:
            found = brokers.get(row["broker"]) or {"error": "not a master broker of the cluster any more"}
            if row["broker"] in result["replaced"] or row["broker"] in result["failed"]:
                continue
            if "error" in found or found["config"] is None:
                result["failed"][row["broker"]] = found.get("error") or "the group's config is gone from this broker"
            else:
                result["replaced"][row["broker"]] = {k: found["config"].get(k) for k in row["after"]}
        runs.save(request, token, result)  # what each broker had, before anything is written
        pending = [r for r in rows if r["broker"] in result["replaced"] and r["broker"] not in result["applied"]]
        for row in pending:
            error = run_on_cluster(request.cluster, lambda c, row=row: _write(c, request.group, row), mutation=True)
            if error is None:
                result["applied"][row["broker"]] = row["after"]
            else:
                result["failed"][row["broker"]] = error
            runs.save(request, token, result)
        back = run_on_cluster(request.cluster, lambda c: read_configs(c, request.group))
        applied = [row for row in rows if row["broker"] in result["applied"]]
        result["read_back"] = {row["broker"]: _check(row, back.get(row["broker"]) or {}) for row in applied}
    except RocketMQError as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    summary = {"before": result["replaced"], "after": result["applied"]}
    return runs.finish(request, token, result, done="applied", summary=summary)


async def _write(client: AdminClient, group: str, row: dict) -> str | None:
    try:
        current = (await client.topology.subscription_groups(row["address"])).get(group)
        if current is None:
            return CONFIG_GONE_HERE
        config = SubscriptionGroupConfig.from_wire({**current.raw, **row["after"]})
        await client.actions.create_or_update_subscription_group(config, [row["address"]])
    except RocketMQError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# The read-back's notes, in English in the request's result (the API gives them so); the change
# page shows them in the reader's language, parsed back (consumers/languages/evidence.py)
HOLDS_NEW = gettext_noop("holds the new values")
HOLDS_OTHER = gettext_noop("holds other values")
CONFIG_GONE = gettext_noop("the group's config is gone")
CONFIG_GONE_HERE = gettext_noop("the group's config is gone from this broker")
NOTE_FORMATS = (HOLDS_NEW, HOLDS_OTHER, CONFIG_GONE, CONFIG_GONE_HERE)
register_formats(*NOTE_FORMATS)


def _check(row: dict, found: dict) -> dict:
    config = found.get("config")
    if config is None:
        return {"ok": False, "values": None, "note": found.get("error") or CONFIG_GONE}
    values = {k: config.get(k) for k in row["after"]}
    ok = values == row["after"]
    return {"ok": ok, "values": values, "note": HOLDS_NEW if ok else HOLDS_OTHER}
