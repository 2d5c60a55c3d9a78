"""Clients that only rocketmq-proxy knows: RocketMQ 5's gRPC SDK consumers.

In cluster mode a proxy never heartbeats its gRPC consumers to the brokers, so a broker answers
"not online" (206) for their groups. The proxy's remoting port answers GET_CONSUMER_CONNECTION_LIST
(203) from its own consumer table: its own gRPC clients, remoting clients that heartbeat to it,
and, when heartbeat sync is on, other proxies' clients. The name server does not list proxies,
so their addresses are configured per cluster.

A group the brokers call offline is asked of every proxy. Clients found on any proxy make it
online (their connections merged); a proxy that could not be read and no proxy with clients
makes its online state unknown (not offline): its clients may be exactly there.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from .errors import ConsumerNotOnline, RocketMQError
from .models import ConsumerConnection
from .remoting import deadline

# asked of every proxy on each poll, so a proxy is probed even when no group needs it
PROBE_GROUP = "rmq-console-probe"
# what a proxy registers gRPC consumers as (ClientActivity.buildConsumeType)
GRPC_KINDS = {"CONSUME_ACTIVELY": "grpc-simple", "CONSUME_PASSIVELY": "grpc-push"}


@dataclass
class ProxyAsk:
    """Which groups a poll asks the proxies about. A proxy answers a connection list slowly
    (about 330 a second measured on 5.3.3, where a broker answers thousands), so on a large
    cluster the groups are asked within a budget: every group that had proxy clients at the last
    poll (so a stopped gRPC client is seen at once), then a rotating slice of the others (so a
    new gRPC client is seen within ceil(others / room) polls)."""

    addresses: list[str]
    known: frozenset[str] = frozenset()
    budget: int | None = None  # None: every group, every poll
    cursor: int = 0
    next_cursor: int = field(default=0, init=False)

    def select(self, offline: list[str]) -> list[str]:
        if self.budget is None or len(offline) <= self.budget:
            self.next_cursor = 0
            return offline
        first = [g for g in offline if g in self.known]
        rest = [g for g in offline if g not in self.known]
        room = max(0, self.budget - len(first))
        if not rest or room == 0:
            self.next_cursor = self.cursor
            return first
        start = self.cursor % len(rest)
        picked = (rest + rest)[start : start + min(room, len(rest))]
        self.next_cursor = (start + len(picked)) % len(rest)
        return first + picked


@dataclass(slots=True)
class ProxyStatus:
    address: str
    error: str | None = None  # the proxy could not be read (every request failed)
    groups: int = 0  # groups with clients on it
    group_names: list[str] = field(default_factory=list)  # which (a scoped user counts only theirs)


async def read_proxies(client, groups: list[str], proxies: list[str], *, proxy_deadline: float | None = None):
    """({proxy: ProxyStatus}, {group: (merged connection or None, {proxy: error})}).
    A group maps to None when no proxy knows a client of it."""
    wanted = [PROBE_GROUP, *groups]

    async def ask(address: str) -> list:
        try:
            with deadline(proxy_deadline) if proxy_deadline else contextlib.nullcontext():
                return await client.progress.consumer_connections_many([(g, address) for g in wanted])
        except RocketMQError as exc:
            return [exc] * len(wanted)

    answers = dict(zip(proxies, await asyncio.gather(*(ask(p) for p in proxies)), strict=True))
    statuses = {p: ProxyStatus(p) for p in proxies}
    for address, replies in answers.items():
        failures = [r for r in replies if isinstance(r, RocketMQError) and not isinstance(r, ConsumerNotOnline)]
        if len(failures) == len(replies):
            statuses[address].error = f"{type(failures[0]).__name__}: {failures[0]}"
    found: dict[str, tuple[ConsumerConnection | None, dict[str, str]]] = {}
    for index, group in enumerate(wanted[1:], start=1):
        known, errors = [], {}
        for address, replies in answers.items():
            reply = replies[index]
            if isinstance(reply, ConsumerConnection) and reply.connections:
                known.append(reply)
                statuses[address].groups += 1
                statuses[address].group_names.append(group)
            elif isinstance(reply, RocketMQError) and not isinstance(reply, ConsumerNotOnline):
                errors[address] = f"{type(reply).__name__}: {reply}"
        found[group] = (merge(known) if known else None, errors)
    return statuses, found


def merge(connections: list[ConsumerConnection]) -> ConsumerConnection:
    """One view of a group's clients across proxies (a client synced to several counts once)."""
    clients = {c.client_id: c for conn in connections for c in conn.connections}
    subscriptions = {}
    for conn in connections:
        subscriptions.update(conn.subscriptions)
    first = connections[0]
    return ConsumerConnection(
        connections=[clients[k] for k in sorted(clients)],
        subscriptions=subscriptions,
        consume_type=first.consume_type,
        message_model=first.message_model,
        consume_from_where=first.consume_from_where,
    )
