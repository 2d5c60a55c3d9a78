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

from ..rocketmq import AdminClient, RocketMQError, TopicNotFound
from ..rocketmq.codes import retry_topic
from ..rocketmq.models.topology import Perm

RUNNING_INFO_TIMEOUT = 5.0  # the broker relays the question to the client and waits for it


class TargetRefused(Exception):
    """A redrive cannot send there; the message says why and what to do instead."""


async def check_writable(client: AdminClient, topic: str) -> None:
    try:
        route = await client.topology.topic_route(topic, max_age=0)
    except TopicNotFound:
        raise TargetRefused(f"topic {topic} does not exist") from None
    if not any(Perm.writable(q.perm) for q in route.queue_datas):
        raise TargetRefused(f"topic {topic} is not writable")


async def check_group_target(client: AdminClient, group: str) -> None:
    """Back to the group: its %RETRY% topic takes writes and no online client consumes orderly.
    A client that does not say how it consumes refuses it too: unknown is not "not orderly"."""
    await check_writable(client, retry_topic(group))
    clients = await _online_clients(client, group)
    if not clients:
        return
    targets = [(group, client_id, address) for client_id, address in clients.items()]
    infos = await client.progress.running_info_many(targets, timeout=RUNNING_INFO_TIMEOUT)
    instead = "Redrive to the original topic or to another topic instead."
    for (_, client_id, _), info in zip(targets, infos, strict=True):
        if isinstance(info, RocketMQError):
            raise TargetRefused(
                f"cannot tell whether {group} consumes orderly: client {client_id} did not report its running "
                f"info ({type(info).__name__}: {info}). Sent to an orderly group, messages go straight back "
                f"to its DLQ. {instead}"
            )
        if info.orderly:
            raise TargetRefused(
                f"{group} consumes orderly (client {client_id}): while its consumers hold queue locks the "
                f"broker puts every message sent to {retry_topic(group)} straight back into its DLQ. {instead}"
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
