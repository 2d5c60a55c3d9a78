"""Queue allocation of a group and what is wrong with it, from one poll's GroupProgress.

Everything here is a pure function of what the brokers and the clients reported: the
connection list (client ids, versions) and each client's running info (the queues it
holds, its subscriptions, its allocation strategy, and for broadcasting groups its own
offsets).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats
from ..rocketmq import GroupProgress
from ..rocketmq.codes import RETRY_PREFIX


@dataclass(frozen=True)
class Diagnostic:
    kind: str
    severity: str  # "warn" or "info"
    message: str

    def to_wire(self) -> dict:
        return {"kind": self.kind, "severity": self.severity, "message": self.message}


def queue_label(topic: str, broker: str, queue_id: int) -> str:
    return f"{topic}@{broker}#{queue_id}"


def allocation_by_client(progress: GroupProgress) -> dict[str, list[str]]:
    """client id -> the queues it holds (subscribed topics and the retry topic), sorted."""
    return {
        client_id: sorted(
            queue_label(mq.topic, mq.broker_name, mq.queue_id) for mq, q in info.mq_table.items() if not q.dropped
        )
        for client_id, info in sorted(progress.running_info.items())
    }


def broadcast_offsets(progress: GroupProgress) -> dict[str, list[dict]]:
    """For broadcasting groups: each client's own offset and lag per queue."""
    result = {}
    for client_id, info in sorted(progress.running_info.items()):
        rows = []
        for mq, queue in sorted(info.mq_table.items()):
            if mq.topic.startswith(RETRY_PREFIX):
                continue
            bound = progress.bounds.get(mq)
            rows.append(
                {
                    "queue": queue_label(mq.topic, mq.broker_name, mq.queue_id),
                    "commit_offset": queue.commit_offset,
                    "max_offset": bound.max_offset if bound else None,
                    "lag": (bound.max_offset - queue.commit_offset) if bound and queue.commit_offset >= 0 else None,
                }
            )
        result[client_id] = rows
    return result


def message_model(progress: GroupProgress) -> str | None:
    if progress.connection and progress.connection.message_model:
        return progress.connection.message_model
    models = {info.message_model for info in progress.running_info.values() if info.message_model}
    return models.pop() if len(models) == 1 else None


# The diagnostics' messages, in English: the poll writes them into the group's document once for
# every reader, and the API keeps them so; pages show them in the reader's language, parsed back
# by these formats (consumers/languages/evidence.py, as the health evidence)
VIA_PROXY = gettext_noop(
    "RocketMQ 5 clients through rocketmq-proxy (POP): the broker assigns messages per request, so no queue is held "
    "by a client. Lag counts messages nobody has taken yet; messages taken and not yet acknowledged (in flight) are "
    "not in it."
)
REMOTING_POP = gettext_noop(
    "Remoting clients switched to POP (mqadmin setConsumeMode): the broker hands out messages per pop request, so "
    "no queue is held by one client. Each client's pops and unacknowledged messages are listed below; lag counts "
    "only what nobody has popped yet."
)
MIXED_CONSUMERS = gettext_noop(
    "Remoting clients and %(count)s RocketMQ 5 gRPC client(s) via a proxy (%(clients)s) consume in one group: the "
    "remoting ones hold queues and commit offsets, the gRPC ones pop what the broker assigns, and neither sees the "
    "other in its rebalance. The allocation below covers the remoting clients only. Run one kind per group."
)
BROADCASTING = gettext_noop(
    "Broadcasting group: every client consumes every queue and keeps its offsets itself; they are shown per client "
    "below, not read from the broker."
)
RUNNING_INFO_UNKNOWN = gettext_noop("Allocation unknown for %(count)s client(s) that did not answer: %(clients)s.")
DUPLICATE_CLIENT_ID = gettext_noop(
    "Client id %(client)s is used by %(count)s connections (%(addresses)s): they are given the same queues and other "
    "queues go unconsumed. Give each consumer its own instanceName."
)
UNHELD_QUEUES = gettext_noop(
    "%(unheld)s of %(queues)s queue(s) are held by no client while %(clients)s client(s) are online: %(labels)s"
)
UNPOPPED_QUEUES = gettext_noop(
    "%(silent)s of %(queues)s queue(s) have not been popped from by any of the %(clients)s client(s) in "
    "%(seconds)ss: %(labels)s"
)
DEFAULT_RECONSUME_TIMES = gettext_noop("16 (default)")
POP_DROPS_FAILURES = gettext_noop(
    "Remoting POP clients never send failures to the DLQ: a message that failed maxReconsumeTimes (%(times)s) times "
    "is retried with growing delays until 4 h after it was sent, then acknowledged and dropped. Failing messages of "
    "this group are lost, not dead-lettered; watch its retry topics."
)
CLIENTS_WITHOUT_QUEUES = gettext_noop(
    "%(idle)s client(s) hold no queue (%(names)s): the group has %(clients)s clients for %(queues)s queues, so they "
    "stand idle."
)
DIFFERENT_SUBSCRIPTIONS = gettext_noop(
    "Members of the group subscribe differently, so rebalancing hands queues to clients that filter their messages "
    "out: %(subscriptions)s"
)
MIXED_VERSIONS = gettext_noop("Mixed client versions: %(versions)s")
MIXED_STRATEGIES = gettext_noop(
    "Clients use different allocation strategies, so they disagree on who holds which queue: %(strategies)s"
)
DIAGNOSTIC_FORMATS = (
    VIA_PROXY, REMOTING_POP, MIXED_CONSUMERS, BROADCASTING, RUNNING_INFO_UNKNOWN, DUPLICATE_CLIENT_ID, UNHELD_QUEUES,
    UNPOPPED_QUEUES, DEFAULT_RECONSUME_TIMES, POP_DROPS_FAILURES, CLIENTS_WITHOUT_QUEUES, DIFFERENT_SUBSCRIPTIONS,
    MIXED_VERSIONS, MIXED_STRATEGIES,
)  # fmt: skip
register_formats(*DIAGNOSTIC_FORMATS)

# how a group's clients consume, from what brokers and proxies report of them
# in English; pages translate them (templatetags/console.py: consumption_label)
CONSUMPTION = {
    "grpc-simple": gettext_noop("gRPC SimpleConsumer (POP, via proxy)"),
    "grpc-push": gettext_noop("gRPC PushConsumer (POP, via proxy)"),
    "push": gettext_noop("push (remoting)"),
    "pull": gettext_noop("pull (remoting)"),
    "pop": gettext_noop("POP (remoting)"),
    "mixed": gettext_noop("mixed: remoting clients and gRPC clients (via proxy)"),
}


def consumption(progress: GroupProgress) -> str | None:
    """grpc-simple, grpc-push (clients known only to a proxy), push or pull (remoting clients on
    the brokers), pop (remoting clients switched to POP: the brokers' request modes say so, or
    the clients report queues they pop from); None: no client is known."""
    from ..rocketmq.proxies import GRPC_KINDS

    connection = progress.connection
    if connection is None or not connection.connections:
        return None
    if progress.via_proxy:
        return GRPC_KINDS.get(connection.consume_type or "", "grpc-push")
    if progress.proxy_clients:
        return "mixed"
    if remoting_pop(progress):
        return "pop"
    return {"CONSUME_PASSIVELY": "push", "CONSUME_ACTIVELY": "pull", "CONSUME_POP": "pop"}.get(
        connection.consume_type or ""
    )


def remoting_pop(progress: GroupProgress) -> bool:
    subscribed = set(progress.connection.subscriptions) if progress.connection else set()
    return bool(subscribed & set(progress.pop_topics)) or any(i.pop_table for i in progress.running_info.values())


# a queue no client has popped from for this long is named (a POP client long-polls every few
# seconds even when there is nothing to take, so a quiet topic does not trip it)
POP_SILENCE_SECONDS = 120


def pops_by_client(progress: GroupProgress) -> dict[str, list[dict]]:
    """Remoting POP: each client's pop table (queue id -1: any queue of that broker), with the
    messages it popped and has not acked yet and when it last popped there."""
    return {
        client_id: [
            {
                "queue": queue_label(mq.topic, mq.broker_name, mq.queue_id) if mq.queue_id >= 0
                else f"{mq.topic}@{mq.broker_name}#any",
                "wait_ack": q.wait_ack_count,
                "last_pop_ms": q.last_pop_ms or None,
            }
            for mq, q in sorted(info.pop_table.items()) if not q.dropped
        ]
        for client_id, info in sorted(progress.running_info.items())
        if info.pop_table
    }  # fmt: skip


def diagnose(progress: GroupProgress) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    connection = progress.connection
    if connection is None or not connection.connections:
        return found
    found += _duplicate_client_ids(progress)
    if progress.via_proxy:
        # POP: the broker hands out messages per request; no client holds a queue, so "queue held
        # by no client" and "idle client" do not apply
        found.append(Diagnostic("assigned-by-broker", "info", VIA_PROXY))
        found += _different_subscriptions(progress)
        return found
    if remoting_pop(progress):
        found.append(Diagnostic("assigned-by-broker", "info", REMOTING_POP))
        found += _unpopped_queues(progress)
        found += _pop_drops_failures(progress)
        found += _different_subscriptions(progress)
        found += _mixed(progress)
        return found
    if progress.proxy_clients:
        found.append(
            Diagnostic(
                "mixed-consumers",
                "warn",
                MIXED_CONSUMERS % {"count": len(progress.proxy_clients), "clients": ", ".join(progress.proxy_clients)},
            )
        )
    model = message_model(progress)
    if model == "BROADCASTING":
        found.append(Diagnostic("broadcasting", "info", BROADCASTING))
    unreadable = {p.target for p in progress.problems if p.scope == "running-info"}
    if model != "BROADCASTING" and not unreadable:
        found += _unheld_queues(progress)
        found += _clients_without_queues(progress)
    found += _different_subscriptions(progress)
    found += _mixed(progress)
    if unreadable:
        found.append(
            Diagnostic(
                "running-info-unknown",
                "info",
                RUNNING_INFO_UNKNOWN % {"count": len(unreadable), "clients": ", ".join(sorted(unreadable))},
            )
        )
    return found


def _duplicate_client_ids(progress: GroupProgress) -> list[Diagnostic]:
    counts = Counter(c.client_id for c in progress.connection.connections)
    found = []
    for client_id, count in sorted(counts.items()):
        if count > 1:
            addrs = sorted(c.client_addr for c in progress.connection.connections if c.client_id == client_id)
            found.append(
                Diagnostic(
                    "duplicate-client-id",
                    "warn",
                    DUPLICATE_CLIENT_ID % {"client": client_id, "count": count, "addresses": ", ".join(addrs)},
                )
            )
    return found


def _group_queues(progress: GroupProgress) -> list:
    """The group's queues of its subscribed topics: committed or not, retry topics apart."""
    return sorted({q.queue for q in progress.main_queues} | set(progress.uncommitted))


def _listed(queues: list) -> str:
    return ", ".join(str(mq) for mq in queues[:6]) + (" ..." if len(queues) > 6 else "")


def _unheld_queues(progress: GroupProgress) -> list[Diagnostic]:
    topics = set(progress.topics) | {mq.topic for mq in progress.uncommitted}
    held = {mq for info in progress.running_info.values() for mq, q in info.mq_table.items() if not q.dropped}
    queues = _group_queues(progress)
    unheld = [mq for mq in queues if mq not in held and mq.topic in topics]
    if not unheld or not progress.running_info:
        return []
    labels = _listed(unheld)
    return [
        Diagnostic(
            "unheld-queues",
            "warn",
            UNHELD_QUEUES
            % {"unheld": len(unheld), "queues": len(queues), "clients": len(progress.running_info), "labels": labels},
        )
    ]


def _unpopped_queues(progress: GroupProgress) -> list[Diagnostic]:
    """Queues of the subscribed topics that no client has popped from lately (a pop-table entry
    with queue id -1 covers every queue of its topic on that broker). Unknown, so not judged,
    while some client's running info could not be read."""
    if any(p.scope == "running-info" for p in progress.problems) or not progress.running_info:
        return []
    since_ms = (progress.fetched_at - POP_SILENCE_SECONDS) * 1000
    popped = {
        (mq.topic, mq.broker_name, mq.queue_id)
        for info in progress.running_info.values()
        for mq, q in info.pop_table.items()
        if not q.dropped and q.last_pop_ms >= since_ms
    }
    queues = _group_queues(progress)
    silent = [
        mq for mq in queues
        if (mq.topic, mq.broker_name, mq.queue_id) not in popped and (mq.topic, mq.broker_name, -1) not in popped
    ]  # fmt: skip
    if not silent:
        return []
    labels = _listed(silent)
    return [
        Diagnostic(
            "unpopped-queues",
            "warn",
            UNPOPPED_QUEUES
            % {
                "silent": len(silent),
                "queues": len(queues),
                "clients": len(progress.running_info),
                "seconds": POP_SILENCE_SECONDS,
                "labels": labels,
            },
        )
    ]


def _pop_drops_failures(progress: GroupProgress) -> list[Diagnostic]:
    """The classic client in POP mode never dead-letters: past maxReconsumeTimes it keeps
    hiding the message with growing delays until twice its last pop delay level (2 h) has passed
    since the message was born, then acknowledges it, dropping it
    (ConsumeMessagePopConcurrentlyService.checkNeedAckOrDelay, client 5.x)."""
    concurrent = {c: info for c, info in sorted(progress.running_info.items()) if info.pop_table and not info.orderly}
    if not concurrent:
        return []
    limits = sorted({info.properties.get("maxReconsumeTimes", "-1") for info in concurrent.values()})
    shown = ", ".join(DEFAULT_RECONSUME_TIMES if v == "-1" else v for v in limits)
    return [
        Diagnostic(
            "pop-drops-failures",
            "warn",
            POP_DROPS_FAILURES % {"times": shown},
        )
    ]


def _clients_without_queues(progress: GroupProgress) -> list[Diagnostic]:
    topics = set(progress.topics) | {mq.topic for mq in progress.uncommitted}
    idle = [
        client_id
        for client_id, info in sorted(progress.running_info.items())
        if not any(mq.topic in topics and not q.dropped for mq, q in info.mq_table.items())
    ]
    if not idle:
        return []
    return [
        Diagnostic(
            "clients-without-queues",
            "warn",
            CLIENTS_WITHOUT_QUEUES
            % {
                "idle": len(idle),
                "names": ", ".join(idle),
                "clients": len(progress.running_info),
                "queues": len(progress.main_queues) + len(progress.uncommitted),
            },
        )
    ]


def _different_subscriptions(progress: GroupProgress) -> list[Diagnostic]:
    signatures = {}
    for client_id, info in sorted(progress.running_info.items()):
        signatures[client_id] = tuple(
            sorted(s.signature for s in info.subscriptions if not s.topic.startswith(RETRY_PREFIX))
        )
    if len(set(signatures.values())) <= 1:
        return []
    described = "; ".join(
        f"{client_id}: " + ", ".join(f"{topic} ({kind} {expr})" for topic, kind, expr in signature)
        for client_id, signature in signatures.items()
    )
    return [
        Diagnostic(
            "different-subscriptions",
            "warn",
            DIFFERENT_SUBSCRIPTIONS % {"subscriptions": described},
        )
    ]


def _mixed(progress: GroupProgress) -> list[Diagnostic]:
    found = []
    versions = Counter(c.version_name for c in progress.connection.connections)
    if len(versions) > 1:
        found.append(
            Diagnostic(
                "mixed-versions",
                "info",
                MIXED_VERSIONS % {"versions": ", ".join(f"{v} ({n})" for v, n in sorted(versions.items()))},
            )
        )
    strategies = Counter(
        info.allocation_strategy for info in progress.running_info.values() if info.allocation_strategy
    )
    if len(strategies) > 1:
        found.append(
            Diagnostic(
                "mixed-allocation-strategies",
                "warn",
                MIXED_STRATEGIES % {"strategies": ", ".join(f"{s} ({n})" for s, n in sorted(strategies.items()))},
            )
        )
    return found
