"""A skip's own step in the reset run (resets.execute's `before`): the group must still be at
the pinned offset, and the messages go to %DLQ%group, once, before the offset moves."""

from __future__ import annotations

from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..resets.execute import NotRun
from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import MessageQueue
from . import services


def before_reset(request: ChangeRequest, result: dict, save) -> None:
    skip = request.params["skip"]
    label = f"{skip['topic']}@{skip['broker']}#{skip['queue_id']}"
    # the offset read when this run (or the first run, for a take-over) started
    problem = services.moved_on(label, skip["offset"], result["replaced"].get(label))
    if problem:
        raise NotRun(problem)
    if not skip["copy_to_dlq"]:
        return
    copied = result.setdefault("copied", {})  # offset (str) -> the copy's client id
    pending = [o for o in range(skip["offset"], skip["offset"] + skip["count"]) if str(o) not in copied]
    if not pending:
        return
    # a run before this one may have sent copies it did not live to record: look for those first
    _ = request.requested_by  # loaded here: the copies name it, and the loop below may not query the database
    check = bool(result.get("copying"))
    result["copying"] = True
    save()
    try:
        run_on_cluster(request.cluster, lambda c: _copy(c, request, pending, copied, check=check), mutation=True)
    finally:
        save()


async def _copy(client: AdminClient, request: ChangeRequest, offsets: list[int], copied: dict, *, check: bool) -> None:
    skip = request.params["skip"]
    mq = MessageQueue(skip["topic"], skip["broker"], skip["queue_id"])
    await services.ensure_dlq(client, request.group, skip["broker"])
    outgoing = []
    for offset in offsets:
        message = await client.messages.read_one(mq, offset)
        if message is None:
            raise RocketMQError(f"the message at {offset} could not be read: nothing was skipped")
        copy = services.copy_of(request, message)
        if check and await client.messages.query_by_unique_key(copy.topic, copy.unique_key):
            copied[str(offset)] = copy.unique_key  # sent before the take-over
            continue
        outgoing.append((offset, copy))
    if not outgoing:
        return
    failed = []
    answers = await client.actions.send_messages([copy for _offset, copy in outgoing])
    for (offset, copy), sent in zip(outgoing, answers, strict=True):
        if isinstance(sent, RocketMQError):
            failed.append(f"{offset}: {sent}")
        else:
            copied[str(offset)] = copy.unique_key
    if failed:
        raise RocketMQError(f"copying to the DLQ failed ({'; '.join(failed)}): nothing was skipped")
