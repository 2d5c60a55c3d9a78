"""Which brokers a cluster has, as far as we know: the name server's view of this poll held
against every broker we have seen before.

A broker the name server no longer lists did not stop existing: its queues still hold
messages nobody reads. So it stays known, `missing since T (not in the name server)`, and
every group keeps its queues on it, stale, until an admin removes it on the cluster page or
it has been missing for BROKER_FORGET_AFTER_SECONDS. A listed broker that did not answer is
`failing`, with the error.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from ..models import Cluster, KnownBroker
from ..rocketmq import ClusterSnapshot
from .documents import BrokerState


@dataclass
class BrokerReport:
    states: list[BrokerState]

    def unreachable(self) -> dict[str, str]:
        """Brokers whose queues this poll could not read, with why."""
        return {b.name: describe(b) for b in self.states if b.state != "ok"}


def describe(broker: BrokerState) -> str:
    if broker.state == "missing":
        since, read = _utc(broker.missing_since), _utc(broker.last_seen_at)
        return f"missing since {since} (not in the name server; last read {read})"
    return f"broker unreadable: {broker.error}"


def _utc(moment: float) -> str:
    return dt.datetime.fromtimestamp(moment, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def reconcile(cluster: Cluster, snapshot: ClusterSnapshot, *, now: float) -> BrokerReport:
    """Record the brokers this poll saw, and report every known broker's state."""
    at = dt.datetime.fromtimestamp(now, dt.UTC)
    forget_before = at - dt.timedelta(seconds=settings.BROKER_FORGET_AFTER_SECONDS)
    states = []
    with transaction.atomic():
        known = {b.name: b for b in KnownBroker.objects.select_for_update().filter(cluster=cluster)}
        for name, status in sorted(snapshot.brokers.items()):
            row = known.pop(name, None) or KnownBroker(cluster=cluster, name=name, first_seen=at, last_seen=at)
            row.address, row.missing_since = status.address, None
            if not status.error:  # last_seen is the last successful read, not the last listing
                row.last_seen = at
            row.broker_cluster = _cluster_of(snapshot, name) or ""
            row.save()
            states.append(_seen_state(snapshot, status, now))
        for row in known.values():
            if row.missing_since is None:
                # missing since the first poll that did not see it (its last read is last_seen):
                # between the two it may have been listed and failing, or up until that poll
                row.missing_since = at
                row.save(update_fields=["missing_since"])
            if row.missing_since < forget_before:
                row.delete()
                continue
            states.append(
                BrokerState(
                    name=row.name,
                    address=row.address,
                    cluster=row.broker_cluster or None,
                    state="missing",
                    error="not in the name server",
                    last_seen_at=row.last_seen.timestamp(),
                    missing_since=row.missing_since.timestamp(),
                )
            )
    return BrokerReport(sorted(states, key=lambda b: b.name))


def _seen_state(snapshot: ClusterSnapshot, status, now: float) -> BrokerState:
    runtime = status.runtime
    return BrokerState(
        name=status.name,
        address=status.address,
        cluster=_cluster_of(snapshot, status.name),
        state="failing" if status.error else "ok",
        version=runtime.version if runtime else None,
        put_tps=runtime.put_tps if runtime else None,
        get_tps=runtime.get_tps if runtime else None,
        boot_ms=runtime.boot_timestamp if runtime else None,
        error=status.error.error if status.error else status.runtime_error,
        last_seen_at=now,
    )


def _cluster_of(snapshot: ClusterSnapshot, broker: str) -> str | None:
    return next((c for c, names in snapshot.cluster_info.clusters.items() if broker in names), None)
