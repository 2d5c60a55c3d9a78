"""The live view's settings as objects: read from django.conf.settings (the one place their
defaults live, see dashboard/settings.py) whenever a poll, a task or a page needs them."""

from __future__ import annotations

from django.conf import settings

from .health import Thresholds
from .history import HistoryStore
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
    return HistoryStore(
        settings.HISTORY_DIR, flush_rows=settings.HISTORY_FLUSH_ROWS, flush_seconds=settings.HISTORY_FLUSH_SECONDS
    )


def history_spool() -> HistorySpool:
    return HistorySpool(settings.HISTORY_SPOOL_DIR, max_polls=settings.HISTORY_SPOOL_MAX_POLLS)


def stale_after(poll_interval: float) -> float:
    """Age past which a value is stale: its expected refresh (the poll interval) plus the
    longest a poll may take and a little slack."""
    return poll_interval + settings.ROCKETMQ_POLL_DEADLINE + settings.STALE_MARGIN_SECONDS
