"""A message's trace, where its clients write one (the Java client's enableMsgTrace, the RocketMQ
5 SDK's trace): the producer's send and each consumption, read back from the trace topic.

The clients send trace records as ordinary messages to a trace topic (RMQ_SYS_TRACE_TOPIC, or
one the site names), keyed by the traced message's client id (UNIQ_KEY), so the broker's index
finds them by that key. A record's body is one or more events separated by \\x02, each a list
of fields separated by \\x01 whose order depends on its type (the Java client's
TraceDataEncoder):

    Pub        time, region, producer group, topic, msg id, tags, keys, store host, body length,
               cost ms, message type, offset msg id, success[, client host]
    SubBefore  time, region, consumer group, request id, msg id, retry times, keys
    SubAfter   request id, msg id, cost ms, success, keys[, context code[, time, consumer group]]

A consumption is a SubBefore and the SubAfter with the same request id (one consume call).
Records the clients have not flushed yet (they batch for up to a second or so) are not there
yet; a trace topic that does not exist means no client writes traces to it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from ..rocketmq import AdminClient, RocketMQError, TopicNotFound
from ..rocketmq.message import Message

CONTENT, EVENT = "\x01", "\x02"
# the Java client's ConsumeReturnType, by the ordinal it writes as the context code
RESULTS = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")
# how far before the message's store time a trace record may be stored (a producer's clock)
BEFORE_MS = 60_000


@dataclass
class Publish:
    at_ms: int
    group: str
    store_host: str
    cost_ms: int | None
    success: bool | None
    client_host: str = ""


@dataclass
class Consume:
    group: str
    request_id: str
    at_ms: int | None = None  # when the consume call began (SubBefore), else when it ended
    retry_times: int | None = None
    cost_ms: int | None = None
    success: bool | None = None  # None: begun, its end not (yet) in the trace
    result: str = ""


@dataclass
class Trace:
    topic: str
    published: list[Publish] = field(default_factory=list)
    consumed: list[Consume] = field(default_factory=list)
    note: str = ""  # why there is nothing, or what could not be read


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def decode(body: str, msg_id: str) -> tuple[list[Publish], dict[str, Consume]]:
    """The events of one trace record about `msg_id` (a record may batch several messages')."""
    published, consumed = [], {}
    for event in body.split(EVENT):
        f = event.split(CONTENT)
        if f[0] == "Pub" and len(f) >= 13 and f[5] == msg_id:
            success = f[13] if len(f) >= 14 else f[12]
            published.append(Publish(at_ms=_int(f[1]) or 0, group=f[3], store_host=f[8], cost_ms=_int(f[10]),
                                     success=success == "true", client_host=f[14] if len(f) >= 15 else ""))  # fmt: skip
        elif f[0] == "SubBefore" and len(f) >= 8 and f[5] == msg_id:
            c = consumed.setdefault(f[4], Consume(group=f[3], request_id=f[4]))
            c.group, c.at_ms, c.retry_times = f[3], _int(f[1]), _int(f[6])
        elif f[0] == "SubAfter" and len(f) >= 6 and f[2] == msg_id:
            c = consumed.setdefault(f[1], Consume(group=f[8] if len(f) >= 9 else "", request_id=f[1]))
            c.cost_ms, c.success = _int(f[3]), f[4] == "true"
            code = _int(f[6]) if len(f) >= 7 else None
            c.result = RESULTS[code] if code is not None and 0 <= code < len(RESULTS) else ""
            if c.at_ms is None and len(f) >= 8:
                c.at_ms = _int(f[7])
    return published, consumed


async def read(client: AdminClient, m: Message, topic: str) -> Trace:
    """The trace of `m` in `topic`; what could not be read is said in `note`, never as "no trace"."""
    msg_id = m.properties.get("UNIQ_KEY") or m.msg_id
    trace = Trace(topic)
    try:
        answer = await client.messages.query_index(topic, msg_id, begin_ms=max(0, m.store_timestamp - BEFORE_MS),
                                                   end_ms=int(time.time() * 1000) + BEFORE_MS)  # fmt: skip
    except TopicNotFound:
        trace.note = _("no trace: the cluster has no topic %(topic)s (its clients write no traces there)") % {
            "topic": topic
        }
        return trace
    except RocketMQError as exc:
        trace.note = _("the trace could not be read: %(error)s") % {"error": f"{type(exc).__name__}: {exc}"}
        return trace
    consumed: dict[str, Consume] = {}
    for found in answer.messages:
        published, events = decode(found.message.body.decode("utf-8", "replace"), msg_id)
        trace.published += published
        for request_id, event in events.items():
            consumed.setdefault(request_id, event).__dict__.update(
                {k: v for k, v in event.__dict__.items() if v not in (None, "")}
            )
    trace.published.sort(key=lambda p: p.at_ms)
    trace.consumed = sorted(consumed.values(), key=lambda c: (c.at_ms or 0, c.group))
    missing = [*answer.errors, *answer.capped]
    if missing:
        trace.note = _("the trace may be incomplete: %(brokers)s could not be read in full") % {
            "brokers": ", ".join(sorted(set(missing)))
        }
    elif not trace.published and not trace.consumed:
        trace.note = _("no trace of this message in %(topic)s (its clients may not trace, or not have flushed yet)") % {
            "topic": topic
        }
    return trace
