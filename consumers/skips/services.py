"""What the skip pages, the API and the task call.

A skip is a reset of one queue to an exact offset, X -> X + N, where X is the offset the group
is pinned at (an orderly client suspending on a message, a listener that never returns): the
same plan, approval, server-side reset path (online clients included), watch-and-verify and
undo as every reset. What it adds:
- X must be the group's committed offset when it is planned, approved and run: a group that
  moved on by itself is not skipped (an exact target behind it would replay, not skip).
- The messages themselves are part of the plan (ids, keys, tags), so the approver and the
  audit name what is skipped.
- Before the offset moves, each message is copied to %DLQ%group (unless the requester says
  not to) with properties saying who skipped it, why, and under which request, exactly once:
  a copy's client id (UNIQ_KEY) is fixed by the request and the offset, and a run that was
  taken over asks the DLQ's index for it before sending again.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from ..changes import notify, workflow
from ..changes.guards import Actor, require_reason, require_role, require_writable
from ..changes.models import ChangeRequest
from ..clusters.connect import run_on_cluster
from ..identity import REQUEST
from ..messages import lookup
from ..models import Cluster
from ..resets import effect
from ..resets import services as resets
from ..resets.strategies import InvalidReset
from ..rocketmq import AdminClient, RocketMQError, TopicNotFound
from ..rocketmq.codes import Perm, dlq_topic
from ..rocketmq.message import Message
from ..rocketmq.models import Outgoing, TopicConfig
from ..web.apischema import JAVA_LONG_MAX, Bool, Int, Obj, Str

# a skip is for the message(s) a group is stuck on, not a way round the reset's review
MAX_MESSAGES = 10
# what a copy in the DLQ says about its skip (beside the message's own properties)
SKIPPED_BY, SKIP_REASON, SKIP_REQUEST = "SKIPPED_BY", "SKIP_REASON", "SKIP_REQUEST"
# the broker's own properties of the stored message: the copy gets its own
BROKER_PROPERTIES = {"MIN_OFFSET", "MAX_OFFSET", "CLUSTER", "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "UNIQ_KEY"}

API_PARAMS = Obj(
    {
        "topic": Str(max_length=255, required=True),
        "broker": Str(max_length=255, required=True),
        "queue_id": Int(0, 65535),
        "offset": Int(0, JAVA_LONG_MAX),
        "count": Int(1, MAX_MESSAGES),
        "copy_to_dlq": Bool(),
    },
    required=("topic", "broker", "queue_id", "offset"),
)


@dataclass(frozen=True)
class Position:
    """Where a skip starts: a queue and the offset the group is pinned at."""

    topic: str
    broker: str
    queue_id: int
    offset: int

    @property
    def label(self) -> str:
        return f"{self.topic}@{self.broker}#{self.queue_id}"


def plan(cluster: Cluster, group: str, at: Position, *, count: int, copy_to_dlq: bool) -> dict:
    """The reset plan of the skip, with the messages it skips; InvalidReset when the group is
    not at `at` (or there are not `count` messages there)."""
    if not 1 <= count <= MAX_MESSAGES:
        raise InvalidReset(
            _("a skip moves past 1 to %(most)s messages, not %(count)s") % {"most": MAX_MESSAGES, "count": count}
        )
    params = {"strategy": "exact", "topics": [at.topic], "offsets": {at.label: at.offset + count}}
    found = resets.preview(cluster, group, params)
    row = next((r for r in found["rows"] if r["label"] == at.label), None)
    if row is None or row["current"] != at.offset:
        committed = _("never committed") if row is None or row["current"] is None else row["current"]
        raise InvalidReset(
            _(
                "the group's committed offset on %(queue)s is %(committed)s, not %(offset)s: "
                "it is not pinned at this message"
            )
            % {"queue": at.label, "committed": committed, "offset": at.offset}
        )
    messages = run_on_cluster(cluster, lambda c: _read(c, at, count))
    if len(messages) < count:
        raise InvalidReset(
            _("only %(found)s of the %(count)s messages from offset %(offset)s are stored on %(queue)s")
            % {"found": len(messages), "count": count, "offset": at.offset, "queue": at.label}
        )
    found["skipped"] = [lookup.row(m) for m in messages]
    found["params"] = {
        **found["params"],
        "skip": {
            "topic": at.topic, "broker": at.broker, "queue_id": at.queue_id, "offset": at.offset, "count": count,
            "copy_to_dlq": copy_to_dlq, "msg_ids": [m.message.msg_id for m in messages],
        },
    }  # fmt: skip
    return found


async def _read(client: AdminClient, at: Position, count: int) -> list[lookup.Located]:
    found = []
    for offset in range(at.offset, at.offset + count):
        answer = await lookup.find_at(client, at.topic, at.broker, at.queue_id, offset)
        found += answer.messages
    return found


def request_skip(*, actor: Actor, cluster: Cluster, group: str, at: Position, count: int, copy_to_dlq: bool,
                 reason: str) -> ChangeRequest:  # fmt: skip
    require_role(actor, REQUEST, _("skipping a message"), "operator", cluster=cluster, group=group)
    require_writable(cluster)
    require_reason(reason)
    found = plan(cluster, group, at, count=count, copy_to_dlq=copy_to_dlq)
    request = workflow.submit(actor=actor, cluster=cluster, group=group, kind=ChangeRequest.Kind.SKIP,
                              params=found["params"], plan=found, reason=reason)  # fmt: skip
    notify.new_request(request)
    return request


def still_pinned(request: ChangeRequest) -> str | None:
    """At approval: None while the group is still at the skip's offset, else the refusal."""
    skip = request.params["skip"]
    label = f"{skip['topic']}@{skip['broker']}#{skip['queue_id']}"
    try:
        committed, _maxes = run_on_cluster(
            request.cluster,
            lambda c: effect.read_now(c, request.group, [r for r in request.plan["rows"] if r["label"] == label]),
            seconds=settings.RESET_PREVIEW_DEADLINE,
        )
    except RocketMQError as exc:
        return _("the group's offset could not be read again (%(error)s)") % {"error": exc}
    return moved_on(label, skip["offset"], committed.get(label))


def moved_on(label: str, offset: int, committed: int | None) -> str | None:
    if committed == offset:
        return None
    return _(
        "the group's committed offset on %(queue)s is now %(committed)s, not %(offset)s: it moved by itself, "
        "nothing is skipped"
    ) % {"queue": label, "committed": committed, "offset": offset}


def copy_key(request_id: int, label: str, offset: int) -> str:
    return hashlib.md5(f"skip/{request_id}/{label}/{offset}".encode(), usedforsecurity=False).hexdigest().upper()


def copy_of(request: ChangeRequest, message: Message) -> Outgoing:
    """The message as it is kept in the group's DLQ: its body, keys, tags and properties, where
    it came from, and who skipped it and why."""
    skip = request.params["skip"]
    label = f"{skip['topic']}@{skip['broker']}#{skip['queue_id']}"
    properties = {k: v for k, v in message.properties.items() if k not in BROKER_PROPERTIES}
    properties.setdefault("ORIGIN_MESSAGE_ID", message.msg_id)
    properties["RETRY_TOPIC"] = message.topic  # what a DLQ message names as its topic (as the broker writes it)
    properties[SKIPPED_BY] = request.requested_by.get_username() if request.requested_by else ""
    properties[SKIP_REASON] = request.reason[:500]
    properties[SKIP_REQUEST] = str(request.pk)
    return Outgoing(
        topic=dlq_topic(request.group),
        body=message.body,
        properties=properties,
        unique_key=copy_key(request.pk, label, message.queue_offset),
    )


async def ensure_dlq(client: AdminClient, group: str, broker: str) -> None:
    """The group's DLQ topic, created as the broker creates it on a first dead letter (one
    queue, readable and writable) on the skipped queue's broker when no broker has it yet."""
    topic = dlq_topic(group)
    try:
        await client.topology.topic_route(topic, max_age=0)
        return
    except TopicNotFound:
        pass
    masters = (await client.topology.cluster_info(max_age=0)).masters()
    if broker not in masters:
        raise RocketMQError(f"{broker} is not in the name server: the DLQ cannot be created there")
    config = TopicConfig(topic, read_queue_nums=1, write_queue_nums=1, perm=Perm.READ | Perm.WRITE)
    await client.actions.create_or_update_topic(config, [masters[broker]])
    for _attempt in range(20):  # the broker registers it with the name server a moment later
        try:
            await client.topology.topic_route(topic, max_age=0)
            return
        except TopicNotFound:
            await asyncio.sleep(0.5)
    raise RocketMQError(f"{topic} was created on {broker} but the name server does not list it yet")
