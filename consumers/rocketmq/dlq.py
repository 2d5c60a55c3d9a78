"""How many messages each group's dead-letter queue holds, from its queues' min and max
offsets on every master that carries it."""

from __future__ import annotations

import asyncio

from .codes import dlq_topic
from .errors import RocketMQError


async def dlq_sizes(
    client, groups: list[str], *, skip_brokers: set[str] = frozenset(), concurrency: int = 32
) -> dict[str, int | None]:
    """Messages in each group's DLQ: 0 for a group without a DLQ topic; None (unknown) when
    a broker holding it could not be read or is in `skip_brokers`."""
    topics = set(await client.topology.topic_list())
    sizes: dict[str, int | None] = {g: 0 for g in groups if dlq_topic(g) not in topics}
    wanted = [g for g in groups if dlq_topic(g) in topics]
    limit = asyncio.Semaphore(concurrency)

    async def size(group: str) -> int | None:
        async with limit:
            try:
                route = await client.topology.topic_route(dlq_topic(group))
                total = 0
                for broker, address in route.master_addrs().items():
                    if broker in skip_brokers:
                        return None
                    stats = await client.progress.topic_stats(dlq_topic(group), address)
                    total += sum(o.max_offset - o.min_offset for o in stats.offsets.values())
                return total
            except RocketMQError:
                return None

    for group, value in zip(wanted, await asyncio.gather(*(size(g) for g in wanted)), strict=True):
        sizes[group] = value
    return sizes
