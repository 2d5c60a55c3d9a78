"""What a poll stores per group: the detail document pages and the API read, its summary
for the list, the compact health sample, and its history rows.

A group document is plain JSON. Every number is as of `as_of` (epoch seconds); parts we
could not read in this poll are carried over from the previous document with their own
`as_of` and a `stale_reason`, and a value never known is None (shown as unknown, never 0).
"""

from __future__ import annotations

from .diagnostics import allocation_by_client, broadcast_offsets, diagnose, message_model, queue_label
from .health import Health, Sample
from .lagtime import LagTime
from .rocketmq import GroupProgress

SUMMARY_FIELDS = (
    "group",
    "as_of",
    "stale",
    "stale_reason",
    "online",
    "clients",
    "message_model",
    "topics",
    "lag",
    "retry_lag",
    "lag_seconds",
    "lag_partial",
    "consume_tps",
    "dlq_count",
    "health",
    "warnings",
)


def build_document(
    progress: GroupProgress,
    *,
    lag_times: dict,
    dlq_count: int | None,
    previous: dict | None,
) -> dict:
    """The detail document of one group from this poll, health still to be set."""
    if any(p.scope == "group" for p in progress.problems):
        return _carry_over(progress, previous)
    model = message_model(progress)
    broadcast = broadcast_offsets(progress) if model == "BROADCASTING" else None
    queues = [_queue_row(progress, q, lag_times.get((progress.group, q.queue))) for q in progress.queues]
    queues += [_uncommitted_row(progress, mq, broadcast) for mq in progress.uncommitted]
    queues += _stale_queues(progress, previous)
    queues.sort(key=lambda r: (r["retry"], r["topic"], r["broker"], r["queue_id"]))
    main = [q for q in queues if not q["retry"] and q["lag"] is not None]
    retry = [q for q in queues if q["retry"]]
    measured = [q["lag_seconds"] for q in main if q["lag"] > 0]
    connection = progress.connection
    subscribed = sorted(t for t in (connection.subscriptions if connection else {}) if not t.startswith("%RETRY%"))
    doc = {
        "group": progress.group,
        "as_of": progress.fetched_at,
        "stale": False,
        "stale_reason": None,
        "online": progress.online,
        "clients": len(connection.connections) if connection else (0 if progress.online is False else None),
        "message_model": model,
        "consume_type": connection.consume_type if connection else None,
        "topics": progress.topics or subscribed or (previous or {}).get("topics", []),
        "lag": _group_lag(main, broadcast, progress.complete),
        "retry_lag": sum(q["lag"] for q in retry) if retry or progress.complete else None,
        # the worst queue; unknown as soon as one lagging queue could not be measured
        "lag_seconds": (max(measured) if measured else 0.0) if None not in measured else None,
        "lag_partial": any(q["stale_reason"] or q["lag"] is None for q in queues),
        "consume_tps": progress.consume_tps,
        "dlq_count": dlq_count,
        "queues": queues,
        "allocation": allocation_by_client(progress),
        "diagnostics": [d.to_wire() for d in diagnose(progress)],
        "connections": [
            {"client_id": c.client_id, "addr": c.client_addr, "language": c.language, "version": c.version_name}
            for c in (connection.connections if connection else [])
        ],
        "broadcast": broadcast,
        "problems": [{"scope": p.scope, "target": p.target, "error": p.error} for p in progress.problems],
    }
    doc["warnings"] = sum(1 for d in doc["diagnostics"] if d["severity"] == "warn")
    return doc


def _queue_row(progress: GroupProgress, q, lag: LagTime | None) -> dict:
    return {
        "topic": q.topic,
        "broker": q.broker_name,
        "queue_id": q.queue_id,
        "retry": q.retry,
        "min": q.min_offset,
        "max": q.broker_offset,
        "consumer": q.consumer_offset,
        "lag": q.lag,
        "lag_seconds": lag.seconds if lag else None,
        "lag_seconds_note": lag.note if lag else "not measured",
        "pull": q.pull_offset,
        "last_consume_ms": q.last_consume_time,
        "clients": list(q.clients),
        "expired": q.offset_expired,
        "as_of": progress.fetched_at,
        "stale_reason": None,
    }


def _group_lag(main: list[dict], broadcast: dict | None, complete: bool) -> int | None:
    if broadcast:
        # every client consumes everything: the group is as far behind as its slowest client
        totals = [sum(r["lag"] for r in rows) for rows in broadcast.values() if all(r["lag"] is not None for r in rows)]
        return max(totals) if totals and len(totals) == len(broadcast) else None
    return sum(q["lag"] for q in main) if main or complete else None


def _uncommitted_row(progress: GroupProgress, mq, broadcast: dict | None) -> dict:
    bound = progress.bounds.get(mq)
    holders = [c for c, info in sorted(progress.running_info.items()) if mq in info.mq_table]
    label = queue_label(mq.topic, mq.broker_name, mq.queue_id)
    per_client = [r for rows in (broadcast or {}).values() for r in rows if r["queue"] == label]
    if per_client and all(r["lag"] is not None for r in per_client):
        # broadcasting: the offsets live on the clients; show the slowest one
        consumer, lag = min(r["commit_offset"] for r in per_client), max(r["lag"] for r in per_client)
        note = "broadcasting: the slowest client's position (see offsets per client)"
    else:
        consumer, lag = None, None
        note = "no committed offset: nobody has consumed this queue yet"
    return {
        "topic": mq.topic,
        "broker": mq.broker_name,
        "queue_id": mq.queue_id,
        "retry": False,
        "min": bound.min_offset if bound else None,
        "max": bound.max_offset if bound else None,
        "consumer": consumer,
        "lag": lag,
        "lag_seconds": None,
        "lag_seconds_note": note,
        "pull": None,
        "last_consume_ms": None,
        "clients": holders,
        "expired": None,
        "as_of": progress.fetched_at,
        "stale_reason": None,
    }


def _stale_queues(progress: GroupProgress, previous: dict | None) -> list[dict]:
    """Queues of brokers we could not read this time, as last seen, marked stale."""
    failed = {p.target: p.error for p in progress.problems if p.scope == "broker"}
    if not failed or not previous:
        return []
    fresh = {(q.topic, q.broker_name, q.queue_id) for q in progress.queues}
    carried = []
    for row in previous.get("queues", []):
        if row["broker"] in failed and (row["topic"], row["broker"], row["queue_id"]) not in fresh:
            carried.append(
                {**row, "stale_reason": row.get("stale_reason") or f"broker unreadable: {failed[row['broker']]}"}
            )
    return carried


def _carry_over(progress: GroupProgress, previous: dict | None) -> dict:
    reason = "; ".join(p.error for p in progress.problems if p.scope == "group")
    if previous:
        return {
            **previous,
            "stale": True,
            "stale_reason": reason,
            "problems": [{"scope": p.scope, "target": p.target, "error": p.error} for p in progress.problems],
        }
    return {
        **{name: None for name in SUMMARY_FIELDS},
        "group": progress.group,
        "as_of": None,
        "stale": True,
        "stale_reason": reason,
        "topics": [],
        "lag_partial": False,
        "warnings": 0,
        "queues": [],
        "allocation": {},
        "diagnostics": [],
        "connections": [],
        "broadcast": None,
        "problems": [{"scope": p.scope, "target": p.target, "error": p.error} for p in progress.problems],
    }


def summary(doc: dict) -> dict:
    return {name: doc.get(name) for name in SUMMARY_FIELDS}


def sample(doc: dict, polled_at: float) -> Sample:
    """The health sample of this poll. A carried-over document is unknown at this poll."""
    if doc.get("stale"):
        return Sample(t=polled_at, online=None, lag=None, complete=False)
    main = [q for q in doc["queues"] if not q["retry"] and q["lag"] is not None]
    retry = [q for q in doc["queues"] if q["retry"]]
    return Sample(
        t=polled_at,
        online=doc["online"],
        lag=doc["lag"],
        queues={
            queue_label(q["topic"], q["broker"], q["queue_id"]): (q["consumer"], q["lag"]) for q in main if q["lag"] > 0
        },
        consumed=sum(q["consumer"] for q in main) if main else None,
        retry_offset=sum(q["max"] for q in retry) if retry else None,
        dlq=doc["dlq_count"],
        expired=[queue_label(q["topic"], q["broker"], q["queue_id"]) for q in main if q["expired"]],
        complete=not doc["problems"],
    )


def set_health(doc: dict, health: Health) -> dict:
    doc["health"] = health.to_wire()
    return doc
