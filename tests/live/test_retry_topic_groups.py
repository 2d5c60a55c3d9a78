"""Groups the broker made from POP retry-topic names, named as such (hand-worked, no broker)."""

from __future__ import annotations

from consumers.live.building import mark_retry_topic_groups
from consumers.live.documents import GroupDocument


def doc(group: str, topics: list[str], online: bool | None = False) -> GroupDocument:
    return GroupDocument(group=group, as_of=1.0, online=online, topics=topics)


def test_a_group_named_group_underscore_topic_is_marked_and_real_groups_are_not():
    docs = {d.group: d for d in (
        doc("G-pay", ["orders", "refunds"], online=True),
        doc("G-pay_orders", []),  # made by a send to %RETRY%G-pay_orders
        doc("G-pay+refunds", []),  # v2 name
        doc("G-pay_invoices", []),  # G-pay does not consume "invoices": an ordinary group
        doc("G-pay_refunds", [], online=True),  # has clients: someone really consumes as it
        doc("orders", ["x"]),
    )}  # fmt: skip
    mark_retry_topic_groups(docs)
    marked = {g: d.made_from_retry_topic for g, d in docs.items() if d.made_from_retry_topic}
    assert marked == {"G-pay_orders": "%RETRY%G-pay_orders", "G-pay+refunds": "%RETRY%G-pay+refunds"}
