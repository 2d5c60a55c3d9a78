"""Reads for the DLQ pages: the broker through `run_on_cluster`, redrive records and jobs from
the database, arrivals from the poll history."""

from __future__ import annotations

import asyncio
import datetime as dt

from ..clusters.connect import run_on_cluster
from ..live import selectors as live
from ..live.config import history_store
from ..models import Cluster
from ..rocketmq import AdminClient
from .browse import (
    CameBack,
    Counted,
    DlqQueue,
    Page,
    Selection,
    count_came_back,
    count_matching,
    dlq_queues,
    read_at,
    read_message,
    read_page,
)
from .models import RedriveJob, RedrivenMessage


def overview(redis, clusters: list[Cluster], scope=None) -> list[dict]:
    """Every group (that `scope` sees) whose last poll saw dead letters, with its DLQ read from
    the broker."""
    rows = live.groups_with_dead_letters(redis, clusters, scope)
    result = []
    for cluster in clusters:
        groups = [r.summary["group"] for r in rows if r.cluster == cluster]
        if not groups:
            continue
        found = run_on_cluster(cluster, lambda client, groups=groups: _read_dlqs(client, groups))
        active = dict(
            RedriveJob.objects.filter(
                cluster=cluster, group__in=groups, state__in=("queued", "running", "paused")
            ).values_list("group", "pk")
        )
        consumption = {r.summary["group"]: r.summary.get("consumption") for r in rows if r.cluster == cluster}
        came = arrivals(cluster, groups)
        for group in groups:
            qs, (oldest, newest) = found[group]
            result.append({
                # how the group's clients consume (the last poll): who sent these dead letters
                "consumption": consumption.get(group),
                "cluster": cluster, "group": group, "queues": qs, "count": sum(q.count for q in qs),
                "readable": all(q.readable for q in qs), "arrivals": came[group],
                "active_job": active.get(group), "oldest_ms": oldest, "newest_ms": newest,
            })  # fmt: skip
    return result


READ_CONCURRENCY = 32  # groups whose DLQ is read at once (a site can have hundreds of DLQ groups)


async def _read_dlqs(client: AdminClient, groups: list[str]) -> dict[str, tuple[list[DlqQueue], tuple]]:
    """Each group's DLQ queues and the store times of its oldest and newest dead letter, the
    groups read side by side (one after the other cost a few round trips per group)."""
    limit = asyncio.Semaphore(READ_CONCURRENCY)

    async def one(group: str) -> tuple[list[DlqQueue], tuple]:
        async with limit:
            queues = await dlq_queues(client, group)
            return queues, await _arrival_times(client, group, queues)

    return dict(zip(groups, await asyncio.gather(*(one(g) for g in groups)), strict=True))


async def _arrival_times(client: AdminClient, group: str, queues: list[DlqQueue]) -> tuple:
    """Oldest and newest store time in the group's DLQ: the messages at min and max - 1."""
    stamps = []
    for q in queues:
        for offset in {q.min, q.max - 1} if q.count else ():
            found = await read_at(client, group, q, offset)
            if found is not None:
                stamps.append(found.store_timestamp)
    return (min(stamps), max(stamps)) if stamps else (None, None)


def arrivals(cluster: Cluster, groups: list[str]) -> dict[str, dict]:
    """Each group's dead letters in the last hour and day, from the polled DLQ sizes (None: no
    history), from one read of the history for all of them."""
    now = dt.datetime.now(dt.UTC)
    table = history_store().read("group_stats", cluster.name, groups=groups, since=now - dt.timedelta(days=1))
    points: dict[str, list] = {}
    for group, t, n in zip(table.column("group").to_pylist(), table.column("ts").to_pylist(),
                           table.column("dlq_count").to_pylist(), strict=True):  # fmt: skip
        if n is not None:
            points.setdefault(group, []).append((t, n))  # the read is sorted by group, then time
    return {group: _arrivals(points.get(group, []), now) for group in groups}


def _arrivals(points: list[tuple], now: dt.datetime) -> dict:
    if len(points) < 2:
        return {"hour": None, "day": None}
    latest = points[-1][1]
    hour_ago = [n for t, n in points if t <= now - dt.timedelta(hours=1)]
    return {"hour": latest - (hour_ago[-1] if hour_ago else points[0][1]), "day": latest - points[0][1]}


def page(cluster: Cluster, group: str, selection: Selection, cursor: dict | None) -> tuple[list[DlqQueue], Page, dict]:
    async def read(client):
        return await dlq_queues(client, group), await read_page(client, group, selection, cursor=cursor)

    queues, found = run_on_cluster(cluster, read)
    status = redrive_status(cluster, group, [(r["broker"], r["queue_id"], r["offset"]) for r in found.rows])
    return queues, found, status


COUNT_SCAN_LIMIT = 10_000  # dead letters read to count a filter's matches: about a second on a local broker


def matching(
    cluster: Cluster, group: str, selection: Selection, queues: list[DlqQueue], found: Page, first_page: bool
) -> Counted:
    """How many dead letters the filter selects (not the DLQ's size, which the broker knows).
    Without a filter that size is the answer, and a first page that read the whole DLQ found
    every match; otherwise the DLQ is read and counted, up to COUNT_SCAN_LIMIT dead letters
    (beyond: a lower bound). For `job`, only after the job's plan: its copies came back later."""
    if selection == Selection():
        return Counted(sum(q.count for q in queues), 0, 0)
    if first_page and not found.more:
        return Counted(len(found.rows), found.scanned, 0)
    since = None
    if selection.job is not None:
        since = (
            RedriveJob.objects.filter(pk=selection.job, cluster=cluster, group=group)
            .values_list("bounds", flat=True)
            .first()
        )
    return run_on_cluster(cluster, lambda c: count_matching(c, group, selection, COUNT_SCAN_LIMIT, since))


def redrive_status(cluster: Cluster, group: str, messages: list[tuple[str, int, int]]) -> dict:
    """For each (broker, queue, offset): the redrives that sent it (one query)."""
    sources = {f"{b}#{q}" for b, q, _ in messages}
    offsets = {o for _, _, o in messages}
    found: dict = {}
    for record in RedrivenMessage.objects.filter(
        cluster=cluster, group=group, source__in=sources, source_offset__in=offsets
    ).order_by("sent_at"):
        found.setdefault(f"{record.source}:{record.source_offset}", []).append(record)
    return found


def message(cluster: Cluster, group: str, broker: str, queue_id: int, offset: int):
    return run_on_cluster(cluster, lambda c: read_message(c, group, broker, queue_id, offset))


def job(pk: int) -> RedriveJob | None:
    return RedriveJob.objects.select_related("cluster", "created_by", "change_request").filter(pk=pk).first()


def jobs_of(cluster: Cluster, group: str) -> list[RedriveJob]:
    return list(RedriveJob.objects.filter(cluster=cluster, group=group).select_related("created_by")[:20])


CAME_BACK_SCAN_LIMIT = 20_000  # dead letters read per look: a few seconds on a local broker


def came_back(found: RedriveJob) -> CameBack:
    """The job's copies that failed again and are back in the DLQ (read from the broker)."""
    return run_on_cluster(
        found.cluster,
        lambda c: count_came_back(c, found.group, found.pk, found.bounds, CAME_BACK_SCAN_LIMIT),
    )
