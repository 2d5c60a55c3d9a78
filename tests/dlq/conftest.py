"""Fixtures shared by the DLQ tests."""

from __future__ import annotations

import pytest

from consumers.models import Cluster


@pytest.fixture
def cluster(db, namesrv, redis, history_dir):
    return Cluster.objects.create(name="local", namesrv_addrs=namesrv)
