"""Ask the online clients of a group about themselves: each through a broker it is connected to
(the broker relays GET_CONSUMER_RUNNING_INFO over the client's own connection), all at once,
within the call timeout. A client that does not answer is named with why, never left out.

A client only a proxy knows (a RocketMQ 5 gRPC client, or a remoting client of the proxy) cannot
be asked, and is listed with why. Read in RocketMQ 5.3's proxy: in cluster mode it registers its
clients with no broker, so no broker can relay to them, and its relay service answers neither
running info nor consume-directly (ClusterProxyRelayService returns nothing for both). In local
mode (the proxy inside the broker) it relays a running-info request to a gRPC client only with
jstackEnable, as the SDK's PrintThreadStackTraceCommand, and the answer holds the stacks alone
(GrpcClientChannel, ClientActivity.reportThreadStackTrace)."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.utils.translation import gettext_noop

from .. import audit
from ..clusters.connect import run_on_cluster
from ..languages.evidence import register_formats
from ..models import Cluster
from ..rocketmq import AdminClient, ConsumerNotOnline, RocketMQError
from ..rocketmq.models import ClientConnection, ConsumerRunningInfo, SubscriptionData
from . import stacks

# a client answers from its own threads; a stack dump of a busy JVM takes a while
CALL_TIMEOUT = 12.0

# kept in English (the API), shown translated
NOT_CONNECTED = gettext_noop("no broker knows this client as connected to the group now")
NO_ANSWER = gettext_noop("the client did not answer through %(broker)s: %(error)s")
VIA_PROXY = gettext_noop(
    "known only to the proxy %(proxy)s, which in cluster mode registers its clients with no broker and relays no "
    "request to them: neither its running info, nor its thread stacks, nor a message to verify can reach it"
)
register_formats(NOT_CONNECTED, NO_ANSWER, VIA_PROXY)


@dataclass
class ClientReading:
    client_id: str
    connection: ClientConnection | None = None  # as the relaying broker knows it
    relay: str | None = None  # the broker (name) that relayed the question
    info: ConsumerRunningInfo | None = None
    error: str | None = None  # why it could not be read
    # the group's subscription as the relaying broker holds it (the clients' last heartbeats)
    group_subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def differs(self, subscription: SubscriptionData) -> bool:
        """Whether the client subscribes to this topic otherwise than the group does at its broker."""
        held = self.group_subscriptions.get(subscription.topic)
        return held is not None and held.signature != subscription.signature


@dataclass
class GroupClients:
    group: str
    clients: list[ClientReading] = field(default_factory=list)
    # brokers that could not say who is connected (name -> why): a client may be behind them
    unread: dict[str, str] = field(default_factory=dict)


def read_clients(cluster: Cluster, group: str, *, client_id: str | None = None, jstack: bool = False) -> GroupClients:
    """The group's online clients (or the one named) and what each reports about itself."""
    proxies = cluster.proxy_list
    return run_on_cluster(cluster, lambda client: ask(client, group, client_id=client_id, jstack=jstack,
                                                      proxies=proxies), seconds=CALL_TIMEOUT + 8)  # fmt: skip


async def proxy_only(client: AdminClient, group: str, proxies: list[str], known) -> tuple[dict, dict]:
    """The group's clients the proxies know and the brokers do not ({client id: (proxy, connection)}),
    and the proxies that could not say ({"proxy ADDRESS": why})."""
    found: dict[str, tuple[str, ClientConnection]] = {}
    unread: dict[str, str] = {}
    answers = await client.progress.consumer_connections_many([(group, p) for p in proxies])
    for address, answer in zip(proxies, answers, strict=True):
        if isinstance(answer, ConsumerNotOnline):
            continue
        if isinstance(answer, RocketMQError):
            unread[f"proxy {address}"] = str(answer)
            continue
        for connection in answer.connections:
            if connection.client_id not in known:
                found.setdefault(connection.client_id, (address, connection))
    return found, unread


async def ask(client: AdminClient, group: str, *, client_id: str | None = None, jstack: bool = False,
              proxies: list[str] = ()) -> GroupClients:  # fmt: skip
    found = GroupClients(group)
    masters = (await client.topology.cluster_info()).masters()
    names = sorted(masters)
    answers = await client.progress.consumer_connections_many([(group, masters[n]) for n in names])
    relays: dict[str, tuple[str, str, ClientConnection]] = {}  # client id -> (broker, address, connection)
    subscriptions: dict[str, dict[str, SubscriptionData]] = {}  # broker -> the group's subscription there
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, ConsumerNotOnline):
            continue
        if isinstance(answer, RocketMQError):
            found.unread[name] = str(answer)
            continue
        subscriptions[name] = answer.subscriptions
        for connection in answer.connections:
            relays.setdefault(connection.client_id, (name, masters[name], connection))
    proxied, unread = await proxy_only(client, group, list(proxies), relays) if proxies else ({}, {})
    found.unread.update(unread)
    wanted = sorted({*relays, *proxied}) if client_id is None else [client_id]
    targets = [(group, c, relays[c][1]) for c in wanted if c in relays]
    infos = await client.progress.running_info_many(targets, timeout=CALL_TIMEOUT, jstack=jstack)
    answered = {c: info for (_, c, _), info in zip(targets, infos, strict=True)}
    for c in wanted:
        reading = ClientReading(c)
        if c in proxied:
            proxy, reading.connection = proxied[c]
            reading.error = VIA_PROXY % {"proxy": proxy}
        elif c not in relays:
            reading.error = NOT_CONNECTED
        else:
            reading.relay, _, reading.connection = relays[c]
            reading.group_subscriptions = subscriptions[reading.relay]
            info = answered[c]
            if isinstance(info, RocketMQError):
                reading.error = NO_ANSWER % {"broker": reading.relay, "error": info}
            else:
                reading.info = info
        found.clients.append(reading)
    return found


@dataclass
class Capture:
    clients: GroupClients
    reading: stacks.Reading  # the busy consume threads, clustered
    cut: list[str]  # clients whose stack text was cut at stacks.MAX_STACK_CHARS


def capture_now(redis, cluster: Cluster, group: str, *, by: str, remote_addr: str | None = None,
                client_id: str | None = None, details: dict | None = None) -> Capture:  # fmt: skip
    """Every client's thread stacks now (or the one named), clustered, kept and audited. The
    caller holds the group's capture slot (capture_allowed); a cluster that cannot be read gives
    it back and raises RocketMQError."""
    if client_id is not None:
        details = {**(details or {}), "client": client_id}
    try:
        clients = read_clients(cluster, group, client_id=client_id, jstack=True)
    except RocketMQError:
        capture_failed(redis, cluster, group)  # it stopped nobody's threads
        raise
    parsed = {c.client_id: stacks.parse(c.info.jstack if c.info else None) for c in clients.clients}
    reading = stacks.cluster({client: threads for client, (threads, _cut) in parsed.items()}, group)
    keep_capture(redis, cluster, group, at=time.time(), by=by, reading=reading, threads=reading.threads)
    audit.record("capture_stacks", username=by if remote_addr else "system", remote_addr=remote_addr,
                 cluster=cluster.name, group=group,
                 details={"clients": len(clients.clients), "answered": sum(1 for c in clients.clients if c.info),
                          **(details or {})})  # fmt: skip
    return Capture(clients, reading, sorted(client for client, (_threads, cut) in parsed.items() if cut))


CAPTURE_EVERY = 10  # seconds: one capture of a group's stacks at a time (each stops every client's threads briefly)


def capture_allowed(redis, cluster: Cluster, group: str) -> bool:
    """Take the group's capture slot for CAPTURE_EVERY seconds; False while another holds it."""
    return bool(redis.set(_slot(cluster, group), "1", nx=True, ex=CAPTURE_EVERY))


def capture_failed(redis, cluster: Cluster, group: str) -> None:
    """Give the slot back: a capture that reached no client stopped nobody's threads."""
    redis.delete(_slot(cluster, group))


def _slot(cluster: Cluster, group: str) -> str:
    return f"clients:capture:{cluster.pk}:{group}"


# Captures are kept in Redis (the newest CLIENT_STACKS_KEEP per group, for
# CLIENT_STACKS_RETENTION_SECONDS): when, by whom, the clusters, and the busy consume threads
# with their top frames, to compare two captures.
TOP_FRAMES = 8


def keep_capture(redis, cluster: Cluster, group: str, *, at: float, by: str, reading, threads: dict) -> dict:
    """Keep a capture; `threads` maps a thread's key (host and thread id) to the Thread."""
    capture = {
        "at": at,
        "by": by,
        "clients": reading.clients,
        "processes": reading.processes,
        "consume_threads": reading.consume_threads,
        "busy": reading.busy_threads,
        "clusters": [dataclasses.asdict(c) for c in reading.clusters],
        "threads": {
            key: {"name": t.name, "state": t.state, "frames": t.frames[:TOP_FRAMES], "where": t.where}
            for key, t in threads.items()
            if not t.idle
        },
    }
    key = _captures(cluster, group)
    pipe = redis.pipeline()
    pipe.lpush(key, json.dumps(capture))
    pipe.ltrim(key, 0, settings.CLIENT_STACKS_KEEP - 1)
    pipe.expire(key, settings.CLIENT_STACKS_RETENTION_SECONDS)
    pipe.execute()
    return capture


def captures(redis, cluster: Cluster, group: str, *, now: float) -> list[dict]:
    """The group's kept captures, newest first, within their retention."""
    oldest = now - settings.CLIENT_STACKS_RETENTION_SECONDS
    found = [json.loads(raw) for raw in redis.lrange(_captures(cluster, group), 0, -1)]
    return [c for c in found if c["at"] >= oldest]


def stuck(newer: dict, older: dict) -> list[dict]:
    """Busy consume threads in both captures whose top frames did not change between them."""
    same = [
        {"thread": key, "name": t["name"], "frame": t["where"], "state": t["state"]}
        for key, t in sorted(newer["threads"].items())
        if key in older["threads"] and older["threads"][key]["frames"] == t["frames"]
    ]
    return same


def _captures(cluster: Cluster, group: str) -> str:
    return f"clients:captures:{cluster.pk}:{group}"
