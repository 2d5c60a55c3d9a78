"""A restarted rocketmq-proxy knows none of its gRPC clients until each SDK client registers
again (its next heartbeat: measured 20 to 85 s with rocketmq-client-java 5.x). A poll in that
time finds the groups that had clients there with none anywhere; calling them STOPPED would be
a false alarm for every gRPC group of the proxy. So for ROCKETMQ_PROXY_RESTART_GRACE seconds
after a proxy restarted (documents.proxy_states tells when), such a group's clients are
unknown, with the restart as the reason; after that a group still without clients is what it
is. Groups with clients again, or that had none there before, are not touched."""

from __future__ import annotations

from django.conf import settings

from ..rocketmq.positions import Problem
from ..rocketmq.snapshot import ClusterSnapshot
from .documents import ProxyState


def restarting(proxies: list[ProxyState], polled_at: float) -> dict[str, float]:
    """{address: seconds since it restarted} of the proxies within the grace window."""
    grace = settings.ROCKETMQ_PROXY_RESTART_GRACE
    return {
        p.address: polled_at - p.restarted_at
        for p in proxies
        if p.state == "ok" and p.restarted_at is not None and polled_at - p.restarted_at < grace
    }


def hold(snapshot: ClusterSnapshot, had_proxy_clients: frozenset[str], restarted: dict[str, float]) -> list[str]:
    """Make the groups that had proxy clients, and have none now, unknown while a proxy is in
    its grace window; the groups held (to be asked about first again at the next poll)."""
    if not restarted:
        return []
    grace = settings.ROCKETMQ_PROXY_RESTART_GRACE
    held = []
    for group, progress in snapshot.groups.items():
        if progress.online is False and group in had_proxy_clients:
            progress.online = None
            progress.problems += [
                Problem("proxy", address, f"restarted {age:.0f} s ago: its gRPC clients are registering again "
                        f"(they are unknown, not stopped, for {grace} s after a restart)", "ProxyRestarted")
                for address, age in sorted(restarted.items())
            ]  # fmt: skip
            held.append(group)
    return held
