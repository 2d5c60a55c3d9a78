"""Fixtures shared by the DLQ tests."""

from __future__ import annotations

import pytest

from consumers.models import Cluster


@pytest.fixture
def cluster(db, namesrv, redis, history_dir):
    return Cluster.objects.create(name="local", namesrv_addrs=namesrv)


@pytest.fixture
def pacers(monkeypatch) -> list:
    """Every Pacer a run makes, kept for the test to read what each let go (`taken`) and how
    long it held senders back (`held`)."""
    from consumers.dlq import runner

    made = []

    class Kept(runner.Pacer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.taken, self.held, sleep = 0, 0.0, self.sleep

            async def counted(seconds: float) -> None:
                self.held += seconds
                await sleep(seconds)

            self.sleep = counted
            made.append(self)

        async def take(self, count: int) -> None:
            await super().take(count)
            self.taken += count

    monkeypatch.setattr(runner, "Pacer", Kept)
    return made
