"""GET /api/groups/<cluster>/<group>/clients/: what each online client reports about itself."""

from __future__ import annotations

from django.http import JsonResponse

from ..identity import api_view, visible_cluster
from ..rocketmq import RocketMQError
from ..web.errors import json_error
from . import services
from .services import ClientReading


@api_view
def group_clients(request, cluster: str, group: str):
    found = visible_cluster(request, cluster, group)
    if found is None:
        return json_error(404, f"no group {group!r} on {cluster!r}")
    try:
        clients = services.read_clients(found, group)
    except RocketMQError as exc:
        return json_error(502, f"the cluster could not be read: {type(exc).__name__}: {exc}")
    return JsonResponse(
        {
            "cluster": found.name,
            "group": group,
            "clients": [_client(c) for c in clients.clients],
            "unread_brokers": clients.unread,
        }  # fmt: skip
    )


def _client(reading: ClientReading) -> dict:
    found = {"client_id": reading.client_id, "relay": reading.relay, "error": reading.error}
    if reading.connection is not None:
        found.update(language=reading.connection.language, address=reading.connection.client_addr)
    info = reading.info
    if info is None:
        return found
    found.update(
        version=info.client_version,
        consume_threads=_int(info.properties.get("PROP_THREADPOOL_CORE_SIZE")),
        consume_type=info.consume_type,
        message_model=info.message_model,
        orderly=info.orderly,
        subscriptions=[
            {"topic": s.topic, "type": s.expression_type, "expression": s.sub_string, "differs": reading.differs(s)}
            for s in info.subscriptions
        ],
        queues=[
            {
                "queue": f"{mq.topic}@{mq.broker_name}#{mq.queue_id}",
                "offset": pq.commit_offset,
                "held": pq.cached_msg_count,
                "held_mib": pq.cached_msg_size_mib,
                "locked": pq.locked,
                "try_unlock_times": pq.try_unlock_times,
                "last_pull_ms": pq.last_pull_timestamp or None,
                "last_consume_ms": pq.last_consume_timestamp or None,
            }  # fmt: skip
            for mq, pq in sorted(info.mq_table.items(), key=lambda i: (i[0].topic, i[0].broker_name, i[0].queue_id))
        ],
        rates={
            topic: {
                "pull_rt": s.pull_rt,
                "pull_tps": s.pull_tps,
                "consume_rt": s.consume_rt,
                "consume_ok_tps": s.consume_ok_tps,
                "consume_failed_tps": s.consume_failed_tps,
                "consume_failed_messages": s.consume_failed_msgs,
            }  # fmt: skip
            for topic, s in sorted(info.status_table.items())
        },
    )
    return found


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isascii() and value.isdigit() else None
