"""Celery tasks of the live view: thin wrappers that fetch by id and call one service function."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings

from ..jobs.redis_client import get_redis
from ..models import Cluster
from . import parts, snapshots
from .config import history_store, poll_deadline
from .dispatch import claim_due_clusters
from .poll import poll_cluster as poll_cluster_service

log = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def dispatch_polls() -> list[int]:
    redis = get_redis()
    due = claim_due_clusters(redis)
    metas = snapshots.read_metas(redis, due)
    for cluster_id in due:
        # the time limits follow the cluster's poll deadline (longer for many groups)
        meta = metas.get(cluster_id)
        seconds = poll_deadline(meta.groups if meta else None)
        poll_cluster.apply_async((cluster_id,), soft_time_limit=seconds + 30, time_limit=seconds + 60)
    return due


@shared_task(
    ignore_result=True,
    # a poll is a read: running it again after a lost worker is harmless
    acks_late=True,
    # the limits of a poll sent without its own (dispatch_polls gives each cluster's)
    soft_time_limit=settings.ROCKETMQ_POLL_DEADLINE + 30,
    time_limit=settings.ROCKETMQ_POLL_DEADLINE + 60,
)
def poll_cluster(cluster_id: int) -> str:
    cluster = Cluster.objects.filter(pk=cluster_id, enabled=True).first()
    if cluster is None:
        return "gone"
    result = poll_cluster_service(cluster, send=send_part)
    log.info("poll %s: %s, %d groups in %.2fs", cluster.name, result.status, result.groups, result.duration)
    return result.status


@shared_task(ignore_result=True, acks_late=True)
def poll_part(cluster_id: int, poll_id: str, index: int) -> str:
    """One part of a split poll (parts.py); a part is read once, whichever worker claims it."""
    cluster = Cluster.objects.filter(pk=cluster_id, enabled=True).first()
    if cluster is None:
        return "gone"
    return parts.run_posted(cluster, get_redis(), poll_id, index)


def send_part(cluster_id: int, poll_id: str, index: int, deadline_at: float) -> None:
    seconds = max(1.0, deadline_at - time.time())
    poll_part.apply_async((cluster_id, poll_id, index), expires=seconds, soft_time_limit=seconds + 30,
                          time_limit=seconds + 60)  # fmt: skip


@shared_task(ignore_result=True, soft_time_limit=600, time_limit=900)
def maintain_history() -> None:
    """Merge small files, drop dates past the retention (safe on several hosts at once)."""
    store = history_store()
    for name in Cluster.objects.values_list("name", flat=True):
        store.compact(name)
    store.prune(settings.HISTORY_RETENTION_DAYS)
