"""Groups half there: a subscription config with no committed offset on any broker (created, never
consumed, or its offsets cleaned), and committed offsets with no config on any broker (the config
deleted by hand, or a broker that does not create configs automatically). Read from the brokers
when asked: each master's list of configs and one dump of its offset table."""

from __future__ import annotations

import asyncio

from django.conf import settings

from ..clusters.connect import run_on_cluster
from ..identity import Scope
from ..models import Cluster
from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import is_system_group


async def _read(client: AdminClient) -> dict[str, dict]:
    """Per master: {"configs": set of groups, "offsets": group -> topics}, or {"error": why}."""
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()
    dumps = await client.progress.offset_topics_many(list(masters.values()))

    async def one(address: str, dump) -> dict:
        if isinstance(dump, RocketMQError):
            return {"error": f"{type(dump).__name__}: {dump}"}
        try:
            configs = await client.topology.subscription_groups(address)
        except RocketMQError as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        return {"configs": set(configs), "offsets": dump}

    answers = await asyncio.gather(*(one(a, d) for a, d in zip(masters.values(), dumps, strict=True)))
    return dict(zip(masters, answers, strict=True))


def unpaired_groups(cluster: Cluster, scope: Scope) -> dict:
    """The cluster's groups (those `scope` sees, no system group) with a config and no offsets
    anywhere, and with offsets and no config anywhere. With a broker unread, both lists are
    of the brokers read, and `unreadable` names the others: a group may be whole on them."""
    try:
        brokers = run_on_cluster(cluster, _read, seconds=settings.RESET_PREVIEW_DEADLINE)
    except RocketMQError as exc:
        return {"cluster": cluster.name, "error": f"{type(exc).__name__}: {exc}"}
    read = {name: b for name, b in brokers.items() if "error" not in b}
    configs = {g for b in read.values() for g in b["configs"]}
    offsets: dict[str, dict[str, set[str]]] = {}
    for name, b in read.items():
        for group, topics in b["offsets"].items():
            offsets.setdefault(group, {})[name] = topics
    sees = scope.group_test(cluster.name)

    def shown(group: str) -> bool:
        return not is_system_group(group) and sees(group)

    return {
        "cluster": cluster.name,
        "config_without_offsets": sorted(g for g in configs - set(offsets) if shown(g)),
        "offsets_without_config": [
            {
                "group": g,
                "topics": sorted({t for topics in offsets[g].values() for t in topics}),
                "brokers": sorted(offsets[g]),
            }
            for g in sorted(set(offsets) - configs)
            if shown(g)
        ],  # fmt: skip
        "unreadable": [{"broker": n, "reason": b["error"]} for n, b in sorted(brokers.items()) if "error" in b],
    }
