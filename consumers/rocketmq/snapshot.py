"""High-level reads the console is built on.

`cluster_snapshot` gives every group of a cluster its position per topic and queue across
every master, with who holds each queue, and each broker's status; `group_progress` the same
for one group. Both read the groups with `read_groups` (groups.py: a few pipelined phases over
all the groups at once), whose results (positions.py) leave a part that could not be read
listed in the group's `problems` and its numbers None: unknown is not zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from .errors import BrokerError, RocketMQError
from .groups import read_groups
from .models import BrokerRuntimeInfo, ClusterInfo, is_system_group
from .positions import GroupProgress, Problem
from .proxies import ProxyAsk, ProxyStatus
from .remoting import deadline


@dataclass(slots=True)
class BrokerStatus:
    name: str
    address: str
    runtime: BrokerRuntimeInfo | None = None
    error: Problem | None = None  # the broker could not be read: left out of the poll
    runtime_error: str | None = None  # only its runtime figures could not be read


@dataclass(slots=True)
class ClusterSnapshot:
    fetched_at: float
    duration: float
    cluster_info: ClusterInfo
    brokers: dict[str, BrokerStatus]
    groups: dict[str, GroupProgress]
    problems: list[Problem] = field(default_factory=list)
    proxies: dict[str, ProxyStatus] = field(default_factory=dict)


async def group_progress(client, group: str, *, running_info: bool = True) -> GroupProgress:
    masters = (await client.topology.cluster_info(max_age=10.0)).masters()
    return (await read_groups(client, [group], masters=masters, running_info=running_info))[group]


async def cluster_snapshot(
    client,
    *,
    cluster: str | None = None,
    groups: list[str] | None = None,
    running_info: bool = True,
    include_system_groups: bool = False,
    broker_deadline: float | None = None,
    proxies: list[str] | ProxyAsk = (),
) -> ClusterSnapshot:
    """Every group's progress. Raises only when the name server cannot be read at all.

    Each broker is first probed on its own, under `broker_deadline`, all at once: a broker
    that does not answer (dead, hung, refusing) fails alone, is named in the problems, and is
    left out of the rest of the reads, so one hung broker costs one probe, not the poll."""
    started = time.monotonic()
    fetched_at = time.time()
    info = await client.topology.cluster_info()
    masters = info.masters(cluster)
    brokers = {name: BrokerStatus(name, address) for name, address in masters.items()}

    async def probe(status: BrokerStatus) -> tuple[dict, dict[str, set[str]]]:
        try:
            with deadline(broker_deadline) if broker_deadline else contextlib.nullcontext():
                try:
                    status.runtime = await client.topology.broker_runtime_info(status.address)
                except BrokerError as exc:
                    # it answered, so its queues can be read; only its runtime figures are unknown
                    # (5.3 answers SYSTEM_ERROR here for a moment after it boots)
                    status.runtime_error = f"{type(exc).__name__}: {exc}"
                if groups is not None:
                    return {}, {}
                configs = await client.topology.subscription_groups(status.address)
                try:
                    modes = await client.topology.pop_modes(status.address)
                except BrokerError:  # refused (an ACL, an old broker): POP is then told by the clients
                    modes = {}
                return configs, modes
        except RocketMQError as exc:
            status.error = Problem.of("broker", status.name, exc)
            return {}, {}

    names: set[str] = set(groups or [])
    fifo: set[str] = set()
    paused: dict[str, list[str]] = {}
    pop: dict[str, set[str]] = {}
    answers = await asyncio.gather(*(probe(s) for s in brokers.values()))
    for status, (configs, modes) in zip(brokers.values(), answers, strict=True):
        for group, config in configs.items():
            if not config.consume_enable:
                paused.setdefault(group, []).append(status.name)
        names.update(g for g in configs if include_system_groups or not is_system_group(g))
        fifo.update(g for g, config in configs.items() if config.consume_message_orderly)
        for group, topics in modes.items():
            pop.setdefault(group, set()).update(topics)
    problems = [s.error for s in brokers.values() if s.error]
    unreadable = {s.name: s.error for s in brokers.values() if s.error}
    proxy_status: dict[str, ProxyStatus] = {}
    progress = await read_groups(
        client,
        sorted(names),
        masters=masters,
        running_info=running_info,
        unreadable=unreadable,
        proxies=proxies,
        proxy_status=proxy_status,
        proxy_deadline=broker_deadline,
    )
    if groups is None and len(unreadable) < len(brokers):  # some broker's configs were read
        for name, group in progress.items():
            group.fifo = name in fifo
            group.paused_on = sorted(paused.get(name, ()))
            group.pop_topics = sorted(pop.get(name, ()))
    return ClusterSnapshot(
        fetched_at=fetched_at,
        duration=time.monotonic() - started,
        cluster_info=info,
        brokers=brokers,
        groups=progress,
        problems=problems,
        proxies=proxy_status,
    )
