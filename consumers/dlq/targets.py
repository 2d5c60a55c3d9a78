"""Where a redrive may send: a target topic must exist and take writes, and "back to the
group" must not be a group that consumes orderly.

Why orderly groups are refused: a broker that holds unexpired queue locks for a group (an
orderly consumer renews them every 20 s; they live 60 s) stores whatever is sent to
%RETRY%<group> straight into %DLQ%<group> and still answers SEND_OK for %RETRY%
(SendMessageProcessor.handleRetryAndDLQ). Measured on 5.3.3: one message sent to the retry
topic of a live orderly group went to its DLQ. A redrive "back to the group" would report
every message moved while moving it from the DLQ to the DLQ.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..rocketmq import AdminClient, RocketMQError, TopicNotFound
from ..rocketmq.codes import POP_RETRY_SEPARATORS, RETRY_PREFIX, retry_topic
from ..rocketmq.models.topology import Perm
from ..rocketmq.proxies import read_proxies

RUNNING_INFO_TIMEOUT = 5.0  # the broker relays the question to the client and waits for it


class TargetRefused(Exception):
    """A redrive cannot send there; the message says why and what to do instead."""


async def check_writable(client: AdminClient, topic: str) -> None:
    try:
        route = await client.topology.topic_route(topic, max_age=0)
    except TopicNotFound:
        raise TargetRefused(_("topic %(topic)s does not exist") % {"topic": topic}) from None
    if not any(Perm.writable(q.perm) for q in route.queue_datas):
        raise TargetRefused(_("topic %(topic)s is not writable") % {"topic": topic})


async def check_group_target(client: AdminClient, group: str, proxies: list[str] = ()) -> None:
    """Back to the group: its %RETRY% topic takes writes, it does not consume with POP, and no
    online client consumes orderly. A client that does not say how it consumes refuses it too:
    unknown is not "not orderly"."""
    await _refuse_pop(client, group, list(proxies))
    await _refuse_fifo(client, group)
    await check_writable(client, retry_topic(group))
    clients = await _online_clients(client, group)
    if not clients:
        return
    targets = [(group, client_id, address) for client_id, address in clients.items()]
    infos = await client.progress.running_info_many(targets, timeout=RUNNING_INFO_TIMEOUT)
    instead = _("Redrive to the original topic or to another topic instead.")
    for (_group, client_id, _address), info in zip(targets, infos, strict=True):
        if isinstance(info, RocketMQError):
            raise TargetRefused(
                _(
                    "cannot tell whether %(group)s consumes orderly: client %(client)s did not report its running "
                    "info (%(error)s). Sent to an orderly group, messages go straight back to its DLQ. %(instead)s"
                )
                % {"group": group, "client": client_id, "error": f"{type(info).__name__}: {info}", "instead": instead}
            )
        if info.orderly:
            raise TargetRefused(
                _(
                    "%(group)s consumes orderly (client %(client)s): while its consumers hold queue locks the "
                    "broker puts every message sent to %(retry)s straight back into its DLQ. %(instead)s"
                )
                % {"group": group, "client": client_id, "retry": retry_topic(group), "instead": instead}
            )


async def _refuse_fifo(client: AdminClient, group: str) -> None:
    """A group whose subscription config says consumeMessageOrderly is a FIFO group: RocketMQ 5
    FIFO consumers pop (they never read %RETRY%{group}), and remoting orderly consumers hold
    queue locks (the broker puts what is sent to %RETRY%{group} straight into the DLQ). Told
    from the broker, so it holds while no client is online to say how it consumes."""
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()
    if await client.topology.consumes_orderly(group, masters.values()):
        raise TargetRefused(
            _(
                "%(group)s is a FIFO group (its subscription group says consumeMessageOrderly): FIFO consumers "
                "pop and never read %(retry)s, and orderly ones holding queue locks make the broker put what is "
                "sent there straight back into the DLQ. Redrive to the original topic or to another topic instead."
            )
            % {"group": group, "retry": retry_topic(group)}
        )


async def _refuse_pop(client: AdminClient, group: str, proxies: list[str]) -> None:
    """POP consumers (RocketMQ 5 clients through a proxy, or remoting clients switched to POP)
    read their topic and their POP retry topics (%RETRY%{group}_{topic}), never %RETRY%{group},
    and the broker has no send that reaches such a group alone: a send to %RETRY%{group}_{topic}
    makes the broker take "{group}_{topic}" for a group and create it (SendMessageProcessor),
    and a redrive never sends to a %RETRY%X whose X is not its group. So it is refused, with
    the ways that do work."""
    why = None
    if proxies:
        _connections, found = await read_proxies(client, [group], proxies)
        if found[group][0] is not None:
            why = _("its clients are RocketMQ 5 (gRPC) consumers behind a proxy")
        elif found[group][1]:
            why = _("a proxy that may hold its clients cannot be read, so it may consume with POP")
    if why is None:
        masters = (await client.topology.cluster_info(max_age=5.0)).masters()
        stats = await client.progress.consume_stats_many([(group, a) for a in masters.values()])
        prefixes = tuple(f"{RETRY_PREFIX}{group}{sep}" for sep in POP_RETRY_SEPARATORS)
        pop_topics = sorted({mq.topic for s in stats if not isinstance(s, RocketMQError) for mq in s.offsets
                             if mq.topic.startswith(prefixes)})  # fmt: skip
        if pop_topics:
            why = ngettext(
                "it consumes its POP retry topic %(topics)s",
                "it consumes its POP retry topics %(topics)s",
                len(pop_topics),
            ) % {"topics": ", ".join(pop_topics)}
    if why:
        raise TargetRefused(
            _(
                "%(group)s consumes with POP (%(why)s): POP consumers never read %(retry)s, and the broker offers "
                "no send that reaches this group alone (a send to %(retry)s_<topic> makes it create a group named "
                "%(group)s_<topic>). Redrive to the original topic (every group subscribed to it receives the "
                "messages) or to another topic instead."
            )
            % {"group": group, "why": why, "retry": retry_topic(group)}
        )


async def _online_clients(client: AdminClient, group: str) -> dict[str, str]:
    """Client id -> the address of a broker it is connected to, over every master."""
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()
    found: dict[str, str] = {}
    for address in masters.values():
        try:
            connection = await client.progress.consumer_connection(group, address)
        except RocketMQError:  # ConsumerNotOnline: none here; others: this broker cannot say,
            continue  # and a send there would fail on its own
        for client_id in connection.client_ids:
            found.setdefault(client_id, address)
    return found
