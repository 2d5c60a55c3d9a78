"""Building a group's document from what a poll read (`build_document`): its queue rows, lag,
in-flight and TPS figures with the notes that qualify them, what is carried over from the last
document when part could not be read; and what the health engine and the allocation timeline
take from a document (`sample`, `allocation_fingerprint`). The types are documents.py's."""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable

from ..rocketmq import GroupProgress
from ..rocketmq.codes import RETRY_PREFIX
from . import notes
from .diagnostics import (
    allocation_by_client,
    broadcast_offsets,
    consumption,
    diagnose,
    message_model,
    pops_by_client,
    queue_label,
)
from .documents import GroupDocument, QueueRow
from .health import Sample
from .lagtime import LagTime
from .taglag import TagLag, TagLags


def build_document(
    progress: GroupProgress,
    *,
    lag_times: dict,
    dlq_count: int | None,
    tag_lags: TagLags | None = None,
    previous: GroupDocument | None | Callable[[], GroupDocument | None],
    unreachable: dict[str, str] | None = None,
    in_flight: dict[str, int] | None = None,
    in_flight_note: str | None = None,
) -> GroupDocument:
    """The document of one group from this poll, health still to be set.

    `unreachable` names the brokers this poll did not read (missing from the name server, or
    failing), with why: the group's queues on them are carried over from `previous`, marked
    stale, and the lag totals say they are incomplete rather than shrinking. `previous` may be
    a function that reads it: called only when this group needs it (most never do)."""
    previous_of = previous if callable(previous) else (lambda: previous)
    if any(p.scope == "group" for p in progress.problems):
        return _carry_over(progress, previous_of())
    model = message_model(progress)
    broadcast = broadcast_offsets(progress) if model == "BROADCASTING" else None
    unread = {p.target: notes.BROKER_UNREADABLE % {"error": p.error} for p in progress.problems if p.scope == "broker"}
    unread.update(unreachable or {})
    counted = tag_lags.queues if tag_lags else {}
    queues = [_queue_row(progress, q, lag_times.get((progress.group, q.queue)), counted.get((progress.group, q.queue)))
              for q in progress.queues]  # fmt: skip
    queues += [_uncommitted_row(progress, mq, broadcast) for mq in progress.uncommitted]
    queues += _stale_queues(queues, previous_of() if unread else None, unread)
    queues.sort(key=lambda r: (r.retry, r.topic, r.broker, r.queue_id))
    main = [q for q in queues if not q.retry and q.lag is not None]
    retry = [q for q in queues if q.retry]
    measured = [q.lag_seconds for q in main if q.lag > 0]
    connection = progress.connection
    subscribed = sorted(t for t in (connection.subscriptions if connection else {}) if not t.startswith(RETRY_PREFIX))
    kind = consumption(progress)
    tps, tps_note = _consume_tps(progress, model, kind)
    pops = pops_by_client(progress) if kind == "pop" else {}
    doc = GroupDocument(
        group=progress.group,
        as_of=progress.fetched_at,
        online=progress.online,
        clients=len(connection.connections) if connection else (0 if progress.online is False else None),
        clients_note=_clients_note(progress),
        message_model=model,
        consume_type=connection.consume_type if connection else None,
        consumption=kind,
        **_in_flight(progress, kind, in_flight, in_flight_note, pops),
        fifo=progress.fifo,
        paused_on=progress.paused_on,
        lag_seconds_measures=notes.POP_LAG_SECONDS if kind in POP_KINDS else None,
        topics=progress.topics or subscribed or getattr(previous_of(), "topics", None) or [],
        topic_lags={} if broadcast else _topic_lags(queues),
        lag=_group_lag(main, broadcast, progress.complete),
        retry_lag=sum(q.lag for q in retry if q.lag is not None) if retry or progress.complete else None,
        # the worst queue; unknown as soon as one lagging queue could not be measured
        lag_seconds=(max(measured) if measured else 0.0) if None not in measured else None,
        lag_partial=any(q.stale_reason or q.lag is None for q in queues),
        lag_incomplete=_incompleteness(queues, progress, unread),
        **_tag_lag(progress.group, main, tag_lags),
        consume_tps=tps,
        consume_tps_note=tps_note,
        dlq_count=dlq_count,
        queues=queues,
        allocation={} if kind in POP_KINDS else allocation_by_client(progress),  # POP: no client holds a queue
        diagnostics=[d.to_wire() for d in diagnose(progress)],
        connections=[
            {
                "client_id": c.client_id,
                "addr": c.client_addr,
                "language": c.language,
                # a proxy reports its own version for gRPC clients (it cannot parse theirs)
                "version": None if grpc else c.version_name,
                "via": "proxy (gRPC)" if grpc else "broker",
            }
            for c in (connection.connections if connection else [])
            for grpc in [progress.via_proxy or c.client_id in progress.proxy_clients]
        ],
        broadcast=broadcast,
        pops=pops,
        problems=[{"scope": p.scope, "target": p.target, "error": p.error} for p in progress.problems],
    )
    known_problems = {(p["scope"], p["target"]) for p in doc.problems}
    doc.problems += [
        {"scope": "broker", "target": broker, "error": why}
        for broker, why in sorted(unread.items())
        if ("broker", broker) not in known_problems and any(q.broker == broker for q in queues)
    ]
    doc.warnings = sum(1 for d in doc.diagnostics if d["severity"] == "warn")
    return doc


POP_KINDS = ("pop", "grpc-simple", "grpc-push")


def _in_flight(progress: GroupProgress, kind: str | None, found: dict[str, int] | None, note: str | None,
               pops: dict) -> dict:  # fmt: skip
    if kind == "pop":
        # remoting POP: the clients' own counts of popped, unacked messages
        clients = progress.connection.client_ids if progress.connection else []
        if not clients or any(c not in progress.running_info for c in clients):
            return {"in_flight": None, "in_flight_note": notes.IN_FLIGHT_UNKNOWN % {"why": notes.POPS_UNREPORTED}}
        return {"in_flight": sum(r["wait_ack"] for rows in pops.values() for r in rows), "in_flight_note": None}
    if not progress.via_proxy:
        return {}
    if found is None:
        return {"in_flight": None, "in_flight_note": notes.IN_FLIGHT_UNKNOWN % {"why": note}}
    if progress.group not in found:
        return {"in_flight": None, "in_flight_note": notes.IN_FLIGHT_UNKNOWN % {"why": notes.NO_METRICS_FIGURE}}
    return {"in_flight": found[progress.group], "in_flight_note": None}


def _consume_tps(progress: GroupProgress, model: str | None, kind: str | None) -> tuple[float | None, str | None]:
    """The broker's consume TPS; for broadcasting groups the broker keeps no consume stats, so
    it is the sum of what each client reports, and unknown when a client did not report."""
    if kind in POP_KINDS and progress.consume_tps is not None:
        # POP: the broker's rate counts messages handed out (popped), acked or not
        return progress.consume_tps, notes.POP_RATE
    if model != "BROADCASTING":
        return progress.consume_tps, None if progress.consume_tps is not None else notes.NO_RATE
    clients = progress.connection.client_ids if progress.connection else []
    if not clients or any(c not in progress.running_info for c in clients):
        return None, notes.BROADCAST_RATES_UNREAD
    total = 0.0
    for info in progress.running_info.values():
        for topic, status in info.status_table.items():
            if not topic.startswith(RETRY_PREFIX) and status.consume_ok_tps is not None:
                total += status.consume_ok_tps
    return total, notes.BROADCAST_RATES_SUM


def _tag_lag(group: str, main: list[QueueRow], tag_lags: TagLags | None) -> dict:
    """The group's lag for its tags: the sum over the topics it filters, and the raw lag of
    those it does not; unknown when one filtered queue was not counted."""
    filters = tag_lags.filters.get(group) if tag_lags else None
    if not filters:
        return {}
    figures = [q.tag_lag if q.topic in filters else q.lag for q in main]
    return {
        "tag_filters": filters,
        "tag_filters_as_seen": group in tag_lags.remembered,
        "tag_lag": None if None in figures else sum(figures),
        "tag_lag_estimated": any(q.tag_lag_note and q.tag_lag is not None for q in main),
    }


def _queue_row(progress: GroupProgress, q, lag: LagTime | None, tagged: TagLag | None = None) -> QueueRow:
    return QueueRow(
        topic=q.topic,
        broker=q.broker_name,
        queue_id=q.queue_id,
        retry=q.retry,
        min=q.min_offset,
        max=q.broker_offset,
        consumer=q.consumer_offset,
        lag=q.lag,
        lag_seconds=lag.seconds if lag else None,
        lag_seconds_note=lag.note if lag else notes.LAG_NOT_MEASURED,
        pull=q.pull_offset,
        last_consume_ms=q.last_consume_time,
        clients=list(q.clients),
        expired=q.offset_expired,
        as_of=progress.fetched_at,
        tag_lag=tagged.lag if tagged else None,
        tag_lag_note=tagged.note if tagged else None,
    )


def _topic_lags(queues: list[QueueRow]) -> dict[str, dict]:
    """Each topic's lag (unknown when one of its queues' is) and its worst queue's lag seconds
    (unknown when a lagging queue could not be measured)."""
    by_topic: dict[str, list[QueueRow]] = {}
    for q in queues:
        if not q.retry:
            by_topic.setdefault(q.topic, []).append(q)
    found = {}
    for topic, rows in by_topic.items():
        lags = [q.lag for q in rows]
        seconds = [q.lag_seconds for q in rows if q.lag]
        found[topic] = {
            "lag": None if None in lags else sum(lags),
            "lag_seconds": None if None in lags or None in seconds else max(seconds, default=0.0),
        }
    return found


def _group_lag(main: list[QueueRow], broadcast: dict | None, complete: bool) -> int | None:
    if broadcast:
        # every client consumes everything: the group is as far behind as its slowest client
        totals = [sum(r["lag"] for r in rows) for rows in broadcast.values() if all(r["lag"] is not None for r in rows)]
        return max(totals) if totals and len(totals) == len(broadcast) else None
    return sum(q.lag for q in main) if main or complete else None


def _uncommitted_row(progress: GroupProgress, mq, broadcast: dict | None) -> QueueRow:
    bound = progress.bounds.get(mq)
    holders = [c for c, info in sorted(progress.running_info.items()) if mq in info.mq_table]
    label = queue_label(mq.topic, mq.broker_name, mq.queue_id)
    per_client = [r for rows in (broadcast or {}).values() for r in rows if r["queue"] == label]
    if per_client and all(r["lag"] is not None for r in per_client):
        # broadcasting: the offsets live on the clients; show the slowest one
        consumer, lag = min(r["commit_offset"] for r in per_client), max(r["lag"] for r in per_client)
        note = notes.BROADCAST_SLOWEST
    else:
        consumer, lag = None, None
        note = notes.NEVER_CONSUMED
    return QueueRow(
        topic=mq.topic,
        broker=mq.broker_name,
        queue_id=mq.queue_id,
        retry=False,
        min=bound.min_offset if bound else None,
        max=bound.max_offset if bound else None,
        consumer=consumer,
        lag=lag,
        lag_seconds=None,
        lag_seconds_note=note,
        pull=None,
        last_consume_ms=None,
        clients=holders,
        expired=None,
        as_of=progress.fetched_at,
    )


def _stale_queues(fresh_rows: list[QueueRow], previous: GroupDocument | None, unread: dict[str, str]) -> list[QueueRow]:
    """Queues of brokers we could not read this time, as last seen, marked stale."""
    if not unread or not previous:
        return []
    fresh = {(q.topic, q.broker, q.queue_id) for q in fresh_rows}
    return [
        dataclasses.replace(row, stale_reason=row.stale_reason or unread[row.broker])
        for row in previous.queues
        if row.broker in unread and (row.topic, row.broker, row.queue_id) not in fresh
    ]


def _incompleteness(queues: list[QueueRow], progress: GroupProgress, unread: dict[str, str]) -> str | None:
    """Why the lag total leaves part of the group out: per broker, in English (notes.py reads it
    back for a page: INCOMPLETE and, per broker, its name and the reason it is unread)."""
    brokers = sorted({q.broker for q in queues if q.stale_reason} | (set(unread) & set(progress.brokers)))
    if not brokers:
        return None
    why = (f"{b} {unread[b]}" if b in unread else notes.INCOMPLETE_NOT_READ % {"broker": b} for b in brokers)
    return notes.INCOMPLETE % {"brokers": "; ".join(why)}


def _clients_note(progress: GroupProgress) -> str | None:
    """Why this poll does not know whether a client is online: unknown is not "none". In English,
    each reason a format of notes.py (a page reads them back)."""
    if progress.online is not None:
        return None
    why = [
        notes.CLIENTS_NO_ANSWER % {"error": p.error}
        if p.scope == "connection"
        # proxy_grace.hold words the restart: notes.CLIENTS_PROXY_RESTARTED reads the whole back
        else f"proxy {p.target} {p.error}"
        if p.error_type == "ProxyRestarted"
        else notes.CLIENTS_PROXY_UNREAD % {"proxy": p.target, "error": p.error}
        for p in progress.problems
        if p.scope in ("connection", "proxy")
    ]
    return "; ".join(why) or notes.CLIENTS_UNASKED


def _carry_over(progress: GroupProgress, previous: GroupDocument | None) -> GroupDocument:
    reason = "; ".join(p.error for p in progress.problems if p.scope == "group")
    problems = [{"scope": p.scope, "target": p.target, "error": p.error} for p in progress.problems]
    if previous:
        return dataclasses.replace(previous, stale=True, stale_reason=reason, problems=problems)
    return GroupDocument(group=progress.group, as_of=None, stale=True, stale_reason=reason, problems=problems)


def sample(doc: GroupDocument, polled_at: float) -> Sample:
    """The health sample of this poll. A carried-over document is unknown at this poll."""
    if doc.stale:
        return Sample(t=polled_at, online=None, lag=None, complete=False)
    main = [q for q in doc.queues if not q.retry and q.lag is not None and not q.stale_reason]
    retry = [q for q in doc.queues if q.retry and not q.stale_reason]
    held = [q for q in doc.queues if not q.retry and not q.stale_reason]  # committed or not
    # a group that filters by tags is judged on the messages its tags take (taglag.py), where counted
    lags = {q.label: q.tag_lag if q.tag_lag is not None else q.lag for q in main}
    return Sample(
        t=polled_at,
        online=doc.online,
        lag=doc.tag_lag if doc.tag_filters and doc.tag_lag is not None else doc.lag,
        queues={q.label: (q.consumer, lags[q.label]) for q in main if lags[q.label] > 0},
        consumed=sum(q.consumer for q in main) if main else None,
        retry_offset=sum(q.max for q in retry) if retry else None,
        dlq=doc.dlq_count,
        expired=[q.label for q in main if q.expired],
        complete=not doc.problems,
        allocation=allocation_fingerprint(held) if held and not doc.problems and _allocates(doc) else None,
        pop=doc.consumption in POP_KINDS,
        paused=list(doc.paused_on or []),
    )


def _allocates(doc: GroupDocument) -> bool:
    """Clustering groups share queues out; broadcasting ones (every client reads every queue)
    and POP ones (the broker hands out messages, not queues) have no allocation to change."""
    return doc.message_model != "BROADCASTING" and doc.consumption not in POP_KINDS


def allocation_fingerprint(queues: list[QueueRow]) -> int:
    """Which client holds which queue, as one number that changes when any queue changes hands."""
    held = sorted(f"{q.label}={','.join(sorted(q.clients))}" for q in queues)
    return zlib.crc32("\n".join(held).encode())


def mark_retry_topic_groups(docs: dict[str, GroupDocument]) -> None:
    """Name the groups the broker created from POP retry-topic names: `{G}_{T}` (or `{G}+{T}`)
    where G is a group here and T a topic it consumes. Linear in groups and topics."""
    made = {f"{sep}".join((doc.group, topic)): doc.group for doc in docs.values() for topic in doc.topics
            for sep in ("_", "+")}  # fmt: skip
    for name, doc in docs.items():
        owner = made.get(name)
        if owner is not None and owner != name and not doc.online:
            doc.made_from_retry_topic = f"%RETRY%{name}"
