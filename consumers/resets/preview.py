"""The preview of a reset, read from the broker: which queues, where each stands (min, max,
committed offset), where the strategy would put it, and whether the group is online.

`read_preview` is the one broker read behind the request form, the stored plan of a request
and its refresh. It refuses what cannot be reset (a group that does not exist, a topic it does
not consume, offsets past max) with InvalidReset, before anything is sent to a broker.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from django.utils.translation import gettext as _

from ..rocketmq import AdminClient, ConsumerNotOnline, RocketMQError, TopicNotFound
from ..rocketmq.codes import POP_RETRY_SEPARATORS, RETRY_PREFIX, pop_retry_topics, retry_topic
from ..rocketmq.models import MessageQueue
from ..rocketmq.proxies import read_proxies
from .defects import IN_FLIGHT_NOTE, affecting, pop_reset_warnings
from .strategies import InvalidReset, QueueState, compute_targets, totals, validate_params


@dataclass
class GroupOffsets:
    """A group as the brokers know it: committed offsets per queue, and its clients."""

    exists: bool
    committed: dict[MessageQueue, int]
    online: bool | None  # None: a proxy that might know its clients could not be read
    clients: list[str]
    subscribed: list[str]
    via_proxy: bool = False  # its clients are RocketMQ 5 (gRPC) consumers known to a proxy


async def read_group(client: AdminClient, group: str, masters: dict[str, str], proxies: list[str] = ()) -> GroupOffsets:
    """A group's committed offsets and clients. Clients come from the brokers, or, when no broker
    knows one, from the cluster's proxies (RocketMQ 5 gRPC consumers): online None when a proxy
    could not be read and none knew a client (unknown, not offline)."""
    stats = await client.progress.consume_stats_many([(group, address) for address in masters.values()])
    committed: dict[MessageQueue, int] = {}
    for answer in stats:
        if not isinstance(answer, RocketMQError):
            committed.update({mq: w.consumer_offset for mq, w in answer.offsets.items()})
    online, clients, subscribed, via_proxy = False, [], [], False
    for address in masters.values():
        try:
            connection = await client.progress.consumer_connection(group, address)
        except ConsumerNotOnline:
            break
        except RocketMQError:
            continue
        online, clients = bool(connection.connections), connection.client_ids
        subscribed = [t for t in connection.subscriptions if not t.startswith(RETRY_PREFIX)]
        break
    if not online and proxies:
        _connections, found = await read_proxies(client, [group], list(proxies))
        connection, errors = found[group]
        if connection is not None:
            online, clients, via_proxy = True, connection.client_ids, True
            subscribed = [t for t in connection.subscriptions if not t.startswith(RETRY_PREFIX)]
        elif errors:
            online = None
    exists = bool(committed) or bool(online)
    if not exists:
        # only a group with neither offsets nor clients costs the (large) list of every group config
        configs = await asyncio.gather(*(client.topology.subscription_groups(a) for a in masters.values()))
        exists = any(group in found for found in configs)
    return GroupOffsets(exists, committed, online, clients, sorted(subscribed), via_proxy)


async def read_preview(
    client: AdminClient, group: str, params: dict, *, now_ms: int | None = None, proxies: list[str] = ()
) -> dict:
    """The plan of a reset: validated parameters, per-queue rows and totals (JSON-ready)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    params = validate_params(params, now_ms=now_ms)
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()
    state = await read_group(client, group, masters, proxies)
    if not state.exists:
        raise InvalidReset(_("no consumer group %(group)r on this cluster") % {"group": group})
    consumed = sorted({mq.topic for mq in state.committed if not mq.topic.startswith(RETRY_PREFIX)})
    known = sorted(set(consumed) | set(state.subscribed))
    topics = params["topics"] or known
    strangers = [t for t in topics if t not in known]
    if strangers:
        consumes = {"group": group, "topics": ", ".join(strangers), "known": ", ".join(known) or "-"}
        raise InvalidReset(_("%(group)s does not consume %(topics)s (it consumes: %(known)s)") % consumes)
    if not topics:
        raise InvalidReset(
            _("%(group)s has no committed offsets and no online client: no topic to reset") % {"group": group}
        )
    if params["include_retry"]:
        # a POP group (RocketMQ 5 clients) retries through one topic per group and topic
        # (%RETRY%{group}_{topic}); a classic group through %RETRY%{group}
        committed_topics = {mq.topic for mq in state.committed}
        pop = [t for topic in topics for t in pop_retry_topics(group, topic) if t in committed_topics]
        topics = [*topics, *(pop or [retry_topic(group)])]
    queues, unreadable = await _queue_states(client, topics, state.committed)
    found = await _found_by_time(client, queues, params["timestamp_ms"]) if params["strategy"] == "time" else {}
    source = await _source_offsets(client, params, masters) if params["strategy"] == "copy" else {}
    targets = compute_targets(queues, params, found_by_time=found, source_offsets=source)
    pop, fifo, warnings, defects = await _pop_checks(client, group, state, topics, masters, {q.broker for q in queues})
    return {
        "params": params,
        "online": state.online,
        "clients": state.clients,
        # consumes with POP (gRPC clients, POP retry topics, or a POP request mode): the broker
        # hands out messages per request; fifo: its subscription group consumes orderly
        "pop": pop,
        "fifo": fifo,
        "warnings": warnings,
        "defects": defects,  # known broker defects by which this reset may not take
        "read_at_ms": now_ms,
        "rows": [t.to_wire() for t in targets],
        "totals": totals(targets),
        # the name server's masters, and those of them that answered: a broker that routes a
        # topic and did not answer is in "unreadable", never in "brokers_read" too
        "brokers_listed": sorted(masters),
        "brokers_read": sorted(set(masters) - set(unreadable)),
        # brokers routing these topics that did not answer (the service adds known brokers the
        # name server no longer lists): their queues are unknown, and left as they are
        "unreadable": unreadable,
    }


async def _pop_checks(
    client: AdminClient, group: str, state: GroupOffsets, topics: list[str], masters: dict[str, str], brokers: set
) -> tuple[bool, bool | None, list[str], list[str]]:
    """Whether the group consumes with POP, whether it is FIFO, and the warnings that follow:
    in-flight messages come back after their invisible time, and known broker defects."""
    prefixes = tuple(f"{RETRY_PREFIX}{group}{sep}" for sep in POP_RETRY_SEPARATORS)
    pop = state.via_proxy or any(mq.topic.startswith(prefixes) for mq in state.committed)
    address = next(iter(masters.values()), None)
    if not pop and address is not None:
        try:
            pop = bool(set((await client.topology.pop_modes(address)).get(group, ())) & set(topics))
        except RocketMQError:
            pass  # an old broker or an ACL: POP is then told by the clients and retry topics
    if not pop:
        return False, None, [], []
    fifo = await client.topology.consumes_orderly(group, masters.values())
    versions = {}
    for name in sorted(brokers):
        try:
            versions[name] = (await client.topology.broker_runtime_info(masters[name])).version
        except (RocketMQError, KeyError):
            versions[name] = ""
    warnings = [IN_FLIGHT_NOTE, *pop_reset_warnings(versions, fifo=fifo is not False)]
    return True, fifo, warnings, affecting(versions, fifo=fifo is not False)


async def _queue_states(
    client: AdminClient, topics: list[str], committed: dict
) -> tuple[list[QueueState], dict[str, dict]]:
    """The queues of `topics` on every broker that answers, and {broker: why} for those that
    route a topic but do not answer (their queues are unknown: never silently left out)."""
    routes = await client.topology.topic_routes(topics)
    pairs = []
    for topic in topics:
        route = routes[topic]
        if isinstance(route, TopicNotFound):
            raise InvalidReset(_("topic %(topic)s does not exist") % {"topic": topic})
        if isinstance(route, RocketMQError):
            raise route
        pairs += [(topic, name, address) for name, address in sorted(route.master_addrs().items())]
    answers = await client.progress.topic_stats_many([(topic, address) for topic, _broker, address in pairs])
    queues, unreadable = [], {}
    for (topic, broker, _address), table in zip(pairs, answers, strict=True):
        if isinstance(table, RocketMQError):
            entry = unreadable.setdefault(broker, {"broker": broker, "reason": f"{type(table).__name__}: {table}",
                                                   "topics": []})  # fmt: skip
            entry["topics"].append(topic)
            continue
        for mq, bound in sorted(table.offsets.items()):
            queues.append(QueueState(topic, broker, mq.queue_id, bound.min_offset, bound.max_offset, committed.get(mq)))
    if not queues and unreadable:
        raise RocketMQError(f"no broker holding these topics answered: {', '.join(sorted(unreadable))}")
    return queues, unreadable


async def _found_by_time(client: AdminClient, queues: list[QueueState], timestamp: int) -> dict[str, int]:
    offsets = await asyncio.gather(
        *(client.actions.search_offset(MessageQueue(q.topic, q.broker, q.queue_id), timestamp) for q in queues)
    )
    return {q.label: offset for q, offset in zip(queues, offsets, strict=True)}


async def _source_offsets(client: AdminClient, params: dict, masters: dict[str, str]) -> dict[str, int | None]:
    source = await read_group(client, params["source_group"], masters)
    if not source.exists:
        raise InvalidReset(_("no consumer group %(group)r to copy offsets from") % {"group": params["source_group"]})
    return {f"{mq.topic}@{mq.broker_name}#{mq.queue_id}": offset for mq, offset in source.committed.items()}
