"""Fixtures shared by the resets tests against the real broker."""

from __future__ import annotations

from collections import Counter

import pytest

from consumers.models import Cluster
from consumers.rocketmq.ops.actions import Actions


@pytest.fixture
def cluster(db, namesrv, settings, redis):
    settings.RESET_VERIFY_SECONDS = 5
    return Cluster.objects.create(name="local", namesrv_addrs=namesrv)


@pytest.fixture
def broker_calls(monkeypatch):
    """Every offset write the console sends to a broker, counted (nothing else writes offsets)."""
    calls = Counter()
    for name in ("reset_queue_offset", "update_consumer_offset", "reset_offset_by_timestamp"):
        original = getattr(Actions, name)

        async def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return await _original(self, *args, **kwargs)

        monkeypatch.setattr(Actions, name, counted)
    return calls
