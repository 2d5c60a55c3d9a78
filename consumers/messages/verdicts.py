"""Whether one group consumed one message, judged from what the brokers and clients said
(`Reading`), with the evidence in words. Pure functions: `track.py` does the reading.

The verdicts, strongest evidence first:
- skipped: the console's own skip passed over it (a done skip change), its copy in the DLQ;
- dlq: a copy of it is in %DLQ%<group> (it failed every redelivery);
- retry: a copy waits in the group's retry topic, or in SCHEDULE_TOPIC_XXXX for its delay;
- consumed: the group's committed offset on the message's queue is past it (after the
  redeliveries its retry copies show, if any);
- filtered: its tag is not in the group's subscription expression (the broker skips it);
- not_yet: the committed offset is at or before it (so many messages ahead of it);
- popped: a POP group handed it out; whether it was acknowledged the broker cannot tell;
- unknown: what was needed could not be read, with why. Unknown is never "not consumed".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy

from ..rocketmq.codes import dlq_topic
from ..rocketmq.models import ConsumerConnection, ConsumerRunningInfo, MessageQueue, SubscriptionData

# (a context: "consumed" is also a count elsewhere)
LABELS = {
    "consumed": pgettext_lazy("message verdict", "consumed"),
    "not_yet": pgettext_lazy("message verdict", "not yet"),
    "filtered": pgettext_lazy("message verdict", "filtered out"),
    "retry": pgettext_lazy("message verdict", "in retry"),
    "dlq": pgettext_lazy("message verdict", "in the DLQ"),
    "popped": pgettext_lazy("message verdict", "popped (ack unknown)"),
    "skipped": pgettext_lazy("message verdict", "skipped"),
    "unknown": pgettext_lazy("message verdict", "unknown"),
}
POP_KINDS = ("pop", "grpc-simple", "grpc-push")


@dataclass(frozen=True)
class Hint:
    """What the console's last poll knew of a group (consumers.live): how it consumes, and its
    position on the message's queue at that poll."""

    consumption: str | None = None
    message_model: str | None = None
    in_flight: int | None = None
    polled_at: float | None = None
    polled_offset: int | None = None


@dataclass
class Copy:
    """A copy of the message made for a redelivery: in a retry topic, waiting in
    SCHEDULE_TOPIC_XXXX for its delay, or dead in the group's DLQ."""

    kind: str  # retry, scheduled, dlq
    topic: str
    broker: str
    queue_id: int
    offset: int
    store_ms: int
    reconsume_times: int
    delay_level: str | None = None  # scheduled copies
    committed: int | None = None  # retry copies: the group's committed offset on the copy's queue
    committed_error: str | None = None
    redrives: list[dict] = field(default_factory=list)  # dead letters: the console's redrives of it

    @property
    def consumed(self) -> bool | None:
        if self.committed_error is not None:
            return None
        return self.committed is not None and self.committed > self.offset


@dataclass
class ClientTrack:
    client_id: str
    verdict: str
    offset: int | None
    why: str


@dataclass
class GroupTrack:
    group: str
    verdict: str
    why: str
    committed: int | None = None
    ahead: int | None = None
    online: bool | None = None
    consumption: str | None = None
    model: str | None = None
    subscription: str | None = None
    copies: list[Copy] = field(default_factory=list)
    clients: list[ClientTrack] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return LABELS[self.verdict]


@dataclass
class Skip:
    """A skip of the console's that passed over the message (a done skip change whose range
    holds its offset): the change, and the client id its copy in the group's DLQ was sent
    with (None: the requester kept no copy). The copy has an id of its own (the original's is
    only in ORIGIN_MESSAGE_ID), so it is looked for by that id, not the message's."""

    change: int
    copy_key: str | None
    copy: Copy | None = None
    copy_error: str | None = None  # the DLQ's index could not be searched


@dataclass
class Reading:
    group: str
    mq: MessageQueue
    offset: int  # the message's queue offset
    tags: str | None
    committed: int | None = None  # on the message's queue; None: none committed
    committed_error: str | None = None
    connection: ConsumerConnection | None = None  # None: no client online where we asked
    connection_error: str | None = None  # who is connected could not be read
    via_proxy: bool = False
    pop: bool = False  # the brokers' request modes say it pops this topic
    hint: Hint | None = None
    copies: list[Copy] = field(default_factory=list)
    copies_error: str | None = None
    running: dict[str, ConsumerRunningInfo | str] = field(default_factory=dict)  # broadcasting: per client
    skip: Skip | None = None


def tag_matches(sub: SubscriptionData, tags: str | None) -> bool | None:
    """Whether a TAG subscription takes a message with these tags; None for other expression
    types (SQL92 is evaluated on the broker against properties: not judged here). The broker
    compares tag hash codes, the client the tags themselves: a hash collision is filtered
    by the client, so exact comparison is what the group ends up with (FilterAPI, the
    push consumer's tag check)."""
    if (sub.expression_type or "TAG").upper() != "TAG":
        return None
    expression = sub.sub_string.strip()
    if expression in ("", "*"):
        return True
    wanted = set(sub.tags) or {t.strip() for t in expression.split("||") if t.strip()}
    return tags is not None and tags in wanted


def judge(r: Reading) -> GroupTrack:
    conn = r.connection
    online = None if r.connection_error else bool(conn and conn.connections)
    model = (conn.message_model if conn else None) or (r.hint.message_model if r.hint else None)
    t = GroupTrack(r.group, "unknown", "", r.committed, online=online, model=model, consumption=_consumption(r))
    sub = conn.subscriptions.get(r.mq.topic) if conn else None
    match = None
    if sub is not None:
        t.subscription = f"{sub.expression_type or 'TAG'}: {sub.sub_string}"
        match = tag_matches(sub, r.tags)
        if match is None:
            t.notes.append(
                _("filtering unknown: a %(type)s expression is evaluated by the broker") % {"type": sub.expression_type}
            )
    elif conn and conn.connections:
        t.notes.append(
            _("its clients do not subscribe to %(topic)s now (it holds offsets there from before)")
            % {"topic": r.mq.topic}
        )
    elif r.connection_error:
        t.notes.append(
            _("subscription unknown: who is connected could not be read (%(error)s)") % {"error": r.connection_error}
        )
    else:
        t.notes.append(_("subscription unknown: no client is online to say what it subscribes to"))
    t.copies = sorted(r.copies, key=lambda c: (c.reconsume_times, c.store_ms, c.kind))
    if r.copies_error:
        t.notes.append(_("retry and DLQ copies not looked for: %(error)s") % {"error": r.copies_error})
    if r.skip is not None and _skipped(t, r):
        return t
    if _from_copies(t):
        return t
    if match is False:
        t.verdict = "filtered"
        tag = r.tags or _("(none)")
        t.why = _("its tag %(tag)s is not in the subscription %(expression)r") % {
            "tag": tag,
            "expression": sub.sub_string,
        } + _position(r)
        return t
    if model == "BROADCASTING":
        _broadcast(t, r)
        return t
    if r.committed_error:
        t.why = _("its committed offset on %(queue)s could not be read: %(error)s") % {
            "queue": r.mq,
            "error": r.committed_error,
        }
        return t
    if r.committed is None and not (conn and conn.connections) and r.hint is None and not r.connection_error:
        # nothing says it is a group at all: no offset here, no client, and the last poll did not
        # see it consume the topic (mqadmin's track says UNKNOWN for such a name too)
        t.why = _(
            "the brokers name it as a consumer of %(topic)s, but it has no committed offset on %(queue)s, no "
            "client online, and the last poll did not see it consume the topic: whether it is a group is unknown"
        ) % {"topic": r.mq.topic, "queue": r.mq}
        return t
    if r.committed is None:
        t.verdict = "not_yet"
        start = f" ({conn.consume_from_where})" if conn and conn.consume_from_where else ""
        t.why = _(
            "it has committed no offset on %(queue)s: where it starts there depends on consumeFromWhere%(start)s"
        ) % {
            "queue": r.mq,
            "start": start,
        }
        return t
    if t.consumption in POP_KINDS:
        _pop(t, r)
    elif r.committed > r.offset:
        t.verdict = "consumed"
        t.why = _("its committed offset %(committed)s is past the message's offset %(offset)s") % {
            "committed": r.committed,
            "offset": r.offset,
        }
    else:
        t.verdict, t.ahead = "not_yet", r.offset - r.committed
        t.why = _("its committed offset %(committed)s: %(ahead)s message(s) ahead of it on %(queue)s") % {
            "committed": r.committed,
            "ahead": t.ahead,
            "queue": r.mq,
        }
    return t


def _position(r: Reading) -> str:
    if r.committed_error or r.committed is None:
        return ""
    if r.committed > r.offset:
        return _("; its committed offset %(committed)s is past it") % {"committed": r.committed}
    return _("; its committed offset %(committed)s is not yet at it") % {"committed": r.committed}


def _consumption(r: Reading) -> str | None:
    conn = r.connection
    if r.via_proxy and conn:
        return "grpc-simple" if conn.consume_type == "CONSUME_ACTIVELY" else "grpc-push"
    if r.pop or (conn and conn.consume_type == "CONSUME_POP"):
        return "pop"
    if conn and conn.connections:
        return {"CONSUME_ACTIVELY": "pull", "CONSUME_PASSIVELY": "push"}.get(conn.consume_type or "")
    return r.hint.consumption if r.hint else None


def _skipped(t: GroupTrack, r: Reading) -> bool:
    """The console skipped it: the verdict, with where its copy is. A skip the offset went back
    over (an undo, a later reset) is only a note: the group will be sent the message again."""
    skip = r.skip
    if r.committed_error or r.committed is None or r.committed <= r.offset:
        t.notes.append(
            _("skipped by change #%(change)s, but the committed offset is no longer past it (an undo or a later reset)")
            % {"change": skip.change}
        )
        return False
    t.verdict = "skipped"
    said = {"change": skip.change, "dlq": dlq_topic(r.group)}
    if skip.copy is not None:
        c = skip.copy
        said.update(broker=c.broker, queue=c.queue_id, offset=c.offset)
        t.why = _("skipped by change #%(change)s, its copy in %(dlq)s at %(broker)s#%(queue)s offset %(offset)s") % said
        t.copies.append(c)
    elif skip.copy_key is None:
        t.why = _("skipped by change #%(change)s, with no copy kept (the request said not to copy it)") % said
    elif skip.copy_error:
        said["error"] = skip.copy_error
        t.why = _("skipped by change #%(change)s; its copy in %(dlq)s could not be looked for: %(error)s") % said
    else:
        said["id"] = skip.copy_key
        t.why = _("skipped by change #%(change)s; its copy (id %(id)s) is not in %(dlq)s's index") % said
    return True


def _from_copies(t: GroupTrack) -> bool:
    """Verdicts from retry and dead-letter copies; False when there are none."""
    dead = [c for c in t.copies if c.kind == "dlq"]
    if dead:
        d = dead[-1]
        t.verdict = "dlq"
        t.why = _("dead-lettered: %(topic)s offset %(offset)s on %(broker)s, delivered %(times)s time(s) before") % {
            "topic": d.topic,
            "offset": d.offset,
            "broker": d.broker,
            "times": d.reconsume_times,
        }
        return True
    retries = [c for c in t.copies if c.kind == "retry"]
    delivered = {c.reconsume_times for c in retries}
    waiting = [c for c in t.copies if c.kind == "scheduled" and c.reconsume_times not in delivered]
    if waiting:
        w = waiting[-1]
        t.verdict = "retry"
        t.why = _("redelivery %(times)s waits in %(topic)s for delay level %(level)s") % {
            "times": w.reconsume_times,
            "topic": w.topic,
            "level": w.delay_level or "?",
        }
        return True
    if not retries:
        return False
    last = retries[-1]
    where = _("%(topic)s offset %(offset)s on %(broker)s") % {
        "topic": last.topic,
        "offset": last.offset,
        "broker": last.broker,
    }
    said = {"times": last.reconsume_times, "committed": last.committed, "where": where}
    if last.consumed and t.consumption in POP_KINDS:
        t.verdict = "popped"
        t.why = (
            _(
                "redelivery %(times)s was handed out (its pop position %(committed)s is past %(where)s); "
                "whether it was acknowledged the broker cannot tell"
            )
            % said
        )
    elif last.consumed:
        t.verdict = "consumed"
        t.why = _("after %(times)s redelivery(ies): its committed offset %(committed)s is past %(where)s") % said
    elif last.committed_error is None:
        t.verdict = "retry"
        t.why = _("redelivery %(times)s waits at %(where)s; its committed offset there is %(committed)s") % said
    else:
        t.verdict = "retry"
        t.why = _("redelivery %(times)s waits at %(where)s; its offset there could not be read: %(error)s") % {
            **said,
            "error": last.committed_error,
        }
    return True


def _pop(t: GroupTrack, r: Reading) -> None:
    if r.committed <= r.offset:
        t.verdict, t.ahead = "not_yet", r.offset - r.committed
        t.why = _("not popped yet: its pop position %(committed)s, %(ahead)s message(s) ahead of it") % {
            "committed": r.committed,
            "ahead": t.ahead,
        }
        return
    hint = r.hint
    if hint and hint.in_flight == 0 and hint.polled_offset is not None and hint.polled_offset > r.offset:
        t.verdict = "consumed"
        when = dt.datetime.fromtimestamp(hint.polled_at or 0, dt.UTC)
        t.why = _(
            "popped before the poll of %(when)s UTC (its position then %(position)s), when the group had no message "
            "in flight: acknowledged"
        ) % {"when": f"{when:%Y-%m-%d %H:%M:%S}", "position": hint.polled_offset}
        return
    t.verdict = "popped"
    t.why = _(
        "handed out (its pop position %(committed)s is past %(offset)s); whether it was acknowledged is unknown: the "
        "broker keeps no per-message ack state an admin request can read"
    ) % {"committed": r.committed, "offset": r.offset}
    if hint and hint.in_flight is not None:
        t.why += _("; %(count)s in flight at the last poll") % {"count": hint.in_flight}


def _broadcast(t: GroupTrack, r: Reading) -> None:
    clients = r.connection.client_ids if r.connection else []
    if not clients:
        t.why = _("broadcasting: each client keeps its own offsets, and no client is online to ask")
        return
    for client_id in clients:
        info = r.running.get(client_id)
        if not isinstance(info, ConsumerRunningInfo):
            why = (
                _("its running info could not be read: %(error)s") % {"error": info}
                if info
                else _("its running info was not read")
            )
            t.clients.append(ClientTrack(client_id, "unknown", None, why))
            continue
        queue = info.mq_table.get(r.mq)
        if queue is None:
            why = _("it reports no offset for %(queue)s") % {"queue": r.mq}
            t.clients.append(ClientTrack(client_id, "unknown", None, why))
        elif queue.commit_offset > r.offset:
            t.clients.append(ClientTrack(client_id, "consumed", queue.commit_offset, _("its offset is past it")))
        else:
            ahead = _("%(count)s message(s) ahead") % {"count": r.offset - queue.commit_offset}
            t.clients.append(ClientTrack(client_id, "not_yet", queue.commit_offset, ahead))
    verdicts = [c.verdict for c in t.clients]
    behind = verdicts.count("not_yet")
    counted = {"count": behind, "total": len(verdicts)}
    if behind:
        t.verdict = "not_yet"
        t.why = _("broadcasting: %(count)s of %(total)s client(s) have not consumed it") % counted
    elif "unknown" in verdicts:
        counted["count"] = verdicts.count("unknown")
        t.why = _("broadcasting: %(count)s of %(total)s client(s) could not be read") % counted
    else:
        t.verdict, t.why = "consumed", _("broadcasting: every client (%(total)s) is past it") % counted
