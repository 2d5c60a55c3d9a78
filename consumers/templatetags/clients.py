"""A client's running info (consumers/clients/) as its pages show it."""

from __future__ import annotations

import time

from django import template
from django.conf import settings

register = template.Library()


@register.filter
def held_messages(info) -> int:
    """Messages the client has pulled and not yet consumed, over every queue it holds."""
    return sum(q.cached_msg_count for q in info.mq_table.values())


@register.filter
def failed_tps(info) -> str:
    rates = [s.consume_failed_tps for s in info.status_table.values() if s.consume_failed_tps is not None]
    return f"{sum(rates):.1f}" if rates else "—"


@register.filter
def process_queues(info) -> list[dict]:
    return [
        {"label": f"{mq.topic}@{mq.broker_name}#{mq.queue_id}", "info": pq}
        for mq, pq in sorted(
            info.mq_table.items(), key=lambda item: (item[0].topic, item[0].broker_name, item[0].queue_id)
        )
    ]


@register.filter
def differs(reading, subscription) -> bool:
    return reading.differs(subscription)


@register.simple_tag
def latest_capture(cluster, group: str, user) -> dict | None:
    """The group's newest capture of stacks, while young enough to stand as evidence, for those
    who may read stacks (operators and admins of the group)."""
    from ..clients.services import captures
    from ..identity import REQUEST, scope_of
    from ..jobs.redis_client import get_redis

    if not scope_of(user).may(REQUEST, cluster.name, group):
        return None
    now = time.time()
    kept = captures(get_redis(), cluster, group, now=now)
    if not kept or now - kept[0]["at"] > settings.CLIENT_STACKS_EVIDENCE_SECONDS:
        return None
    return {**kept[0], "age": now - kept[0]["at"]}
