"""The live view's settings as objects: read from django.conf.settings (the one place their
defaults live, see dashboard/settings/) whenever a poll, a task or a page needs them."""

from __future__ import annotations

from django.conf import settings

from ..jobs.redis_client import get_redis
from .health import Thresholds
from .history import HistoryStore, RedisOffsets
from .spool import HistorySpool


def default_thresholds() -> Thresholds:
    return Thresholds(
        window_seconds=settings.HEALTH_WINDOW_SECONDS,
        min_samples=settings.HEALTH_MIN_SAMPLES,
        stall_seconds=settings.HEALTH_STALL_SECONDS,
        min_lag=settings.HEALTH_MIN_LAG,
        retry_rate_per_minute=settings.HEALTH_RETRY_RATE_PER_MINUTE,
        rebalance_changes=settings.HEALTH_REBALANCE_CHANGES,
    )


def history_store() -> HistoryStore:
    # a compaction's inputs outlive it by longer than any statistics run reads the history
    grace = settings.STATS_RUN_TIME_LIMIT + 600
    return HistoryStore(settings.HISTORY_URL, state=RedisOffsets(get_redis()), grace=grace)


def history_spool() -> HistorySpool:
    return HistorySpool(settings.HISTORY_SPOOL_DIR, max_polls=settings.HISTORY_SPOOL_MAX_POLLS)


def poll_deadline(groups: int | None) -> float:
    """The longest a poll of a cluster may take, by the groups its last poll saw (None: none
    yet): ROCKETMQ_POLL_DEADLINE, or ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS a thousand groups when
    that is longer, so a cluster that grows past what the fixed deadline reads is not cut off."""
    scaled = (groups or 0) / 1000 * settings.ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS
    return max(float(settings.ROCKETMQ_POLL_DEADLINE), scaled)


def stale_after(poll_interval: float, groups: int | None = None) -> float:
    """Age past which a value is stale: its expected refresh (the poll interval) plus the
    longest a poll of the cluster may take (`groups`: its last poll's) and a little slack."""
    return poll_interval + poll_deadline(groups) + settings.STALE_MARGIN_SECONDS
