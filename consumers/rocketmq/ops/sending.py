"""Building send requests and reading their answers: SEND_MESSAGE_V2 for one message, and
SEND_BATCH_MESSAGE for many to one queue (what `Actions.send_messages` pipelines).

A batch body is the messages one after another, each as
    total size (4) | magic 0 (4) | body CRC 0 (4) | flag (4) | body length (4) | body
    | properties length (2) | properties
(MessageDecoder.encodeMessage). The broker stores each as a message of its own, with its own
properties (UNIQ_KEY, keys, tags), and answers with every stored message's offset id, joined
by commas, and the queue offset of the first. It refuses batches to %RETRY% topics
(SendMessageProcessor.sendBatchMessage), so those go one by one. So do bodies over BATCH_BYTES:
a batch is never compressed (its flag would be every message's), and a single send compresses
over COMPRESS_OVER as Java producers do, which keeps a large decompressed DLQ body under the
broker's maxMessageSize as it was when first sent.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass

from ..codes import DEFAULT_TOPIC, RETRY_PREFIX, RequestCode, ResponseCode
from ..errors import ProtocolError, RocketMQError, broker_error
from ..frame import RemotingCommand
from ..message import FLAG_COMPRESSED, format_properties
from ..models import MessageQueue, Outgoing, SendResult
from .base import ext_int
from .unique_id import new_unique_id

COMPRESS_OVER = 4096  # bytes, as Java producers do (compressMsgBodyOverHowmuch)
BATCH_MESSAGES = 64  # per SEND_BATCH_MESSAGE: a 1,024-message window is 16 requests over 8 queues
BATCH_BYTES = 1 << 20  # well under the broker's 4 MiB maxMessageSize for the whole batch
SEND_STATUS = {
    ResponseCode.SUCCESS: "SEND_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
}
_RECORD_HEAD = struct.Struct(">iiiii")
_U16 = struct.Struct(">H")


@dataclass(slots=True)
class Prepared:
    """A message with its queue chosen: `index` is its place in the caller's list."""

    index: int
    message: Outgoing
    queue: MessageQueue
    address: str


@dataclass(slots=True)
class Plan:
    """What one request carries: its messages and their UNIQ_KEYs, in order."""

    name: str
    sent: list[tuple[Prepared, str]]


def send_fields(
    queue: MessageQueue,
    body: bytes,
    props: dict[str, str],
    unique_key: str | None,
    producer_group: str,
    reconsume_times: int | None,
    max_reconsume_times: int | None,
    compress: bool,
    *,
    batch: bool = False,
) -> tuple[dict, bytes]:
    """The SEND_MESSAGE_V2 header fields and the body (compressed over COMPRESS_OVER, as Java
    producers do); sets UNIQ_KEY and WAIT in `props`."""
    props["UNIQ_KEY"] = unique_key or props.get("UNIQ_KEY") or new_unique_id()
    props["WAIT"] = "true"
    sys_flag = 0
    if compress and len(body) > COMPRESS_OVER:
        body = zlib.compress(body, 5)
        sys_flag |= FLAG_COMPRESSED
    # strings already, and no None: the remoting client passes such fields through untouched
    fields = {
        "a": producer_group,
        "b": queue.topic,
        "c": DEFAULT_TOPIC,
        "d": "4",
        "e": str(queue.queue_id),
        "f": str(sys_flag),
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": format_properties(props),
        "k": "false",
        "m": "true" if batch else "false",
        "n": queue.broker_name,
    }
    if reconsume_times is not None:
        fields["j"] = str(reconsume_times)
    if max_reconsume_times is not None:
        fields["l"] = str(max_reconsume_times)
    return fields, body


def send_result(
    response: RemotingCommand, queue: MessageQueue, unique_key: str, address: str, nth: int = 0, offset_ids=None
) -> SendResult:
    """The result of the `nth` message of a request (0 for a single send); `offset_ids` is the
    answer's msgId split at its commas, when the caller has it already."""
    if offset_ids is None:
        offset_ids = response.ext_fields.get("msgId", "").split(",")
    return SendResult(
        status=SEND_STATUS[response.code],
        msg_id=unique_key,
        offset_msg_id=offset_ids[nth] if nth < len(offset_ids) else "",
        queue=MessageQueue(queue.topic, queue.broker_name, ext_int(response, "queueId", address=address)),
        queue_offset=ext_int(response, "queueOffset", address=address) + nth,
    )


def requests(prepared: list[Prepared], producer_group: str) -> tuple[list[tuple], list[Plan]]:
    """The requests for prepared messages, and what each carries."""
    out, plans = [], []
    by_queue: dict[MessageQueue, list[Prepared]] = {}
    for p in prepared:
        if p.message.topic.startswith(RETRY_PREFIX) or len(p.message.body) > BATCH_BYTES:
            props = dict(p.message.properties)
            fields, body = send_fields(p.queue, p.message.body, props, p.message.unique_key, producer_group,
                                       p.message.reconsume_times, None, True)  # fmt: skip
            out.append((p.address, RequestCode.SEND_MESSAGE_V2, fields, body))
            plans.append(Plan("SEND_MESSAGE_V2", [(p, props["UNIQ_KEY"])]))
        else:
            by_queue.setdefault(p.queue, []).append(p)
    for queue, members in by_queue.items():
        for batch in _batches(members):
            records, sent = [], []
            for p in batch:
                props = dict(p.message.properties)
                props["UNIQ_KEY"] = p.message.unique_key or props.get("UNIQ_KEY") or new_unique_id()
                records.append(_record(p.message.body, format_properties(props).encode()))
                sent.append((p, props["UNIQ_KEY"]))
            fields, _ = send_fields(queue, b"", {}, None, producer_group, None, None, False, batch=True)
            # the broker (5.3) gives each stored message the batch's own properties over its
            # own: a batch UNIQ_KEY would replace every message's, so the batch carries none
            fields["i"] = ""
            out.append((batch[0].address, RequestCode.SEND_BATCH_MESSAGE, fields, b"".join(records)))
            plans.append(Plan("SEND_BATCH_MESSAGE", sent))
    return out, plans


def results(answer: RemotingCommand | RocketMQError, plan: Plan) -> Iterator[tuple[int, SendResult | RocketMQError]]:
    """(index, result) of every message a request carried: one refusal refuses them all."""
    address = plan.sent[0][0].address
    if not isinstance(answer, RocketMQError) and answer.code not in SEND_STATUS:
        answer = broker_error(answer.code, answer.remark, address=address, request=plan.name)
    offset_ids = None if isinstance(answer, RocketMQError) else answer.ext_fields.get("msgId", "").split(",")
    for nth, (p, unique_key) in enumerate(plan.sent):
        if isinstance(answer, RocketMQError):
            yield p.index, answer
            continue
        try:
            yield p.index, send_result(answer, p.queue, unique_key, address, nth, offset_ids)
        except ProtocolError as exc:
            yield p.index, exc


def _batches(members: list[Prepared]) -> Iterator[list[Prepared]]:
    batch, size = [], 0
    for p in members:
        if batch and (len(batch) == BATCH_MESSAGES or size + len(p.message.body) > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(p)
        size += len(p.message.body)
    if batch:
        yield batch


def _record(body: bytes, properties: bytes) -> bytes:
    if len(properties) > 0x7FFF:
        raise ProtocolError(f"properties of {len(properties)} bytes exceed the 32,767-byte limit")
    total = _RECORD_HEAD.size + len(body) + 2 + len(properties)
    return _RECORD_HEAD.pack(total, 0, 0, 0, len(body)) + body + _U16.pack(len(properties)) + properties


async def or_error(lookup: Awaitable):
    """A lookup's value or its error, so that one failure is remembered for the whole batch."""
    try:
        return await lookup
    except RocketMQError as exc:
        return exc


def raise_error(value):
    if isinstance(value, RocketMQError):
        raise value
    return value
