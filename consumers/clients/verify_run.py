"""Carry out an approved consumption verification: each message delivered to the client at most
once, its answer kept (see verify.py)."""

from __future__ import annotations

from ..changes import runs
from ..changes.models import ChangeRequest, State
from ..clusters.connect import run_on_cluster
from ..rocketmq import RocketMQError
from .verify import NOT_ASKED_AGAIN


def execute_verify(request_id: int) -> ChangeRequest | None:
    claimed = runs.claim(request_id, done="answers")
    if claimed is None:
        return None
    request, token = claimed
    result = {"asked": [], "answers": {}, **request.result}
    group, client_id = request.group, request.params["client_id"]
    for row in request.plan["messages"]:
        label = row["label"]
        if label in result["answers"]:
            continue
        if label in result["asked"]:  # asked by a worker that stopped before it kept the answer
            result["answers"][label] = {"error": NOT_ASKED_AGAIN}
            continue
        result["asked"].append(label)
        runs.save(request, token, result)  # before the client is asked: never twice
        try:
            result["answers"][label] = run_on_cluster(request.cluster, lambda c, r=row: _ask(c, group, client_id, r))
        except RocketMQError as exc:  # no broker reached at all: this message's answer, not the run's end
            result["answers"][label] = {"error": f"{type(exc).__name__}: {exc}"}
        runs.save(request, token, result)
    answered = [a for a in result["answers"].values() if "error" not in a]
    state = State.PARTIAL if answered else State.FAILED
    if len(answered) == len(request.plan["messages"]):
        state = State.DONE
    results = sorted({a["result"] for a in answered})
    return runs.end(request, token, result, state, summary={"answered": len(answered), "results": results})


async def _ask(client, group: str, client_id: str, row: dict) -> dict:
    try:
        answer = await client.actions.consume_message_directly(group, client_id, row["offset_msg_id"],
                                                               topic=row["topic"])  # fmt: skip
    except RocketMQError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"result": answer.consume_result, "remark": answer.remark, "spent_ms": answer.spent_time_millis,
            "order": answer.order}  # fmt: skip
