"""The consume queue's own units: QUERY_CONSUME_QUEUE (the request behind `mqadmin queryCq`).

A unit is what the broker keeps per message of a queue: where the message sits in the commit
log, its size, and for a normal topic its tags' hash code (Java's String.hashCode of the tag,
0 for none). The broker filters a TAG subscription with these codes alone, before it reads a
message, which is why counting them gives the lag a tag-filtered group really has.

The broker answers from one consume-queue file per request (300,000 units by default) and does
not cap `count`, so a read asks for a bounded slice and moves on from where the answer ended.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codes import RequestCode
from ..errors import ProtocolError
from ..models import MessageQueue
from .base import Operations, parse_body

MAX_UNITS_PER_REQUEST = 1_000  # about 60 bytes of JSON each in the answer


@dataclass(frozen=True, slots=True)
class UnitSlice:
    start: int  # the queue offset of codes[0]
    codes: list[int]  # tag hash codes, as the broker compares them (signed 32-bit)
    positions: list[int]  # where each message starts in the broker's commit log
    min_offset: int
    max_offset: int


def _signed32(value: int) -> int:
    """Long.intValue(): the broker compares a unit's code with a subscription's as an int."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class ConsumeQueues(Operations):
    async def units(self, broker_addr: str, mq: MessageQueue, start: int, count: int) -> UnitSlice:
        """Up to `count` units of `mq` from queue offset `start`, in order; fewer at the end of
        the queue or of a consume-queue file (ask again from start + len(codes))."""
        count = max(0, min(count, MAX_UNITS_PER_REQUEST))
        fields = {"topic": mq.topic, "queueId": mq.queue_id, "index": start, "count": count}
        response = await self.remoting.call(broker_addr, RequestCode.QUERY_CONSUME_QUEUE, fields)

        def build(data: dict) -> UnitSlice:
            units = data.get("queueData") or []
            if not isinstance(units, list):
                raise ProtocolError("queueData is not a list", address=broker_addr)
            return UnitSlice(
                start=start,
                codes=[_signed32(int(u.get("tagsCode") or 0)) for u in units[:count]],
                positions=[int(u.get("physicOffset", -1)) for u in units[:count]],
                min_offset=int(data.get("minQueueIndex", 0)),
                max_offset=int(data.get("maxQueueIndex", 0)),
            )

        if not response.body:  # "Index n of q@t is not exist!": nothing there (expired or not yet written)
            return UnitSlice(start=start, codes=[], positions=[], min_offset=-1, max_offset=-1)
        return parse_body(response, build, what="consume queue", address=broker_addr)
