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


@dataclass(slots=True)
class Listing:
    """What a poll learns before reading any group: the masters, how each broker answered its
    probe, and the groups their configs name (with the flags those configs carry)."""

    fetched_at: float
    started: float  # monotonic
    cluster_info: ClusterInfo
    masters: dict[str, str]
    brokers: dict[str, BrokerStatus]
    names: list[str]  # sorted
    fifo: set[str] = field(default_factory=set)
    paused: dict[str, list[str]] = field(default_factory=dict)
    pop: dict[str, set[str]] = field(default_factory=dict)
    configs_read: bool = False  # some broker's configs were read: the flags above are known

    @property
    def problems(self) -> list[Problem]:
        return [s.error for s in self.brokers.values() if s.error]

    @property
    def unreadable(self) -> dict[str, Problem]:
        return {s.name: s.error for s in self.brokers.values() if s.error}

    def flag(self, progress: dict[str, GroupProgress]) -> None:
        """Set what the configs say (FIFO, paused, POP topics) on the groups read."""
        if not self.configs_read:
            return
        for name, group in progress.items():
            group.fifo = name in self.fifo
            group.paused_on = sorted(self.paused.get(name, ()))
            group.pop_topics = sorted(self.pop.get(name, ()))

    def snapshot(self, progress: dict[str, GroupProgress], proxies: dict[str, ProxyStatus]) -> ClusterSnapshot:
        return ClusterSnapshot(
            fetched_at=self.fetched_at,
            duration=time.monotonic() - self.started,
            cluster_info=self.cluster_info,
            brokers=self.brokers,
            groups=progress,
            problems=self.problems,
            proxies=proxies,
        )


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
    """Every group's progress. Raises only when the name server cannot be read at all."""
    listing = await list_cluster(
        client, cluster=cluster, groups=groups, include_system_groups=include_system_groups,
        broker_deadline=broker_deadline,
    )  # fmt: skip
    return await read_listing(client, listing, proxies, running_info=running_info, broker_deadline=broker_deadline)


async def read_listing(
    client,
    listing: Listing,
    proxies: list[str] | ProxyAsk = (),
    *,
    running_info: bool = True,
    broker_deadline: float | None = None,
) -> ClusterSnapshot:
    """The listed groups read (read_groups), with what the configs said of them."""
    proxy_status: dict[str, ProxyStatus] = {}
    progress = await read_groups(
        client,
        listing.names,
        masters=listing.masters,
        running_info=running_info,
        unreadable=listing.unreadable,
        proxies=proxies,
        proxy_status=proxy_status,
        proxy_deadline=broker_deadline,
    )
    listing.flag(progress)
    return listing.snapshot(progress, proxy_status)


async def list_cluster(
    client,
    *,
    cluster: str | None = None,
    groups: list[str] | None = None,
    include_system_groups: bool = False,
    broker_deadline: float | None = None,
) -> Listing:
    """The masters and the groups to read (`groups`, or every group their configs name).

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

    listing = Listing(fetched_at, started, info, masters, brokers, [])
    names: set[str] = set(groups or [])
    answers = await asyncio.gather(*(probe(s) for s in brokers.values()))
    for status, (configs, modes) in zip(brokers.values(), answers, strict=True):
        for group, config in configs.items():
            if not config.consume_enable:
                listing.paused.setdefault(group, []).append(status.name)
        names.update(g for g in configs if include_system_groups or not is_system_group(g))
        listing.fifo.update(g for g, config in configs.items() if config.consume_message_orderly)
        for group, topics in modes.items():
            listing.pop.setdefault(group, set()).update(topics)
    listing.names = sorted(names)
    listing.configs_read = groups is None and len(listing.unreadable) < len(brokers)
    return listing
