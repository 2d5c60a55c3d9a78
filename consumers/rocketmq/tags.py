"""Tag hash codes as RocketMQ computes them: Java's String.hashCode over UTF-16 code units,
as a signed 32-bit int. A stored message's consume-queue unit carries the code of its tag, a
TAG subscription the codes of the tags it names, and the broker matches the two."""

from __future__ import annotations

from .models import SubscriptionData

EVERYTHING = ("", "*")


def java_hash(text: str) -> int:
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def filter_codes(subscription: SubscriptionData) -> frozenset[int] | None:
    """The codes a TAG subscription lets through; None when it takes every message (`*`).
    A SQL92 subscription raises ValueError: its filter is not in the units' codes."""
    if (subscription.expression_type or "TAG").upper() != "TAG":
        raise ValueError(subscription.expression_type)
    if subscription.sub_string.strip() in EVERYTHING:
        return None
    tags = subscription.tags or [t.strip() for t in subscription.sub_string.split("||") if t.strip()]
    return frozenset(java_hash(t) for t in tags)
