"""What a poll reads from a cluster, besides the groups' positions: DLQ sizes, exact lag
seconds, tag lag, retention facts and POP messages in flight; and which groups to ask the
cluster's proxies about. A whole poll (poll.py) and a part of a split one (parts.py) read the
same way, each for the groups it was given."""

from __future__ import annotations

import math

from django.conf import settings

from ..models import Cluster
from ..rocketmq import AdminClient, ClusterSnapshot
from ..rocketmq.dlq import dlq_sizes
from ..rocketmq.proxies import ProxyAsk
from . import inflight, lagtime, proxy_grace, retention, snapshots, taglag
from .documents import proxy_states
from .notes import METRICS_NOT_READ
from .publish import PollReading
from .stages import Stages


async def read_rest(
    client: AdminClient,
    cluster: Cluster,
    snapshot: ClusterSnapshot,
    redis,
    polled_at: float,
    *,
    stages: Stages,
    ask: ProxyAsk,
    share: float = 1.0,
) -> tuple[PollReading, list[str]]:
    """The reading of the snapshot's groups, and the groups to ask the proxies about first next
    time. `share`: the part of the per-poll budgets (lag-time and tag-lag lookups) these groups
    get, when they are one part of a split poll."""
    proxies, asked = None, []
    if ask.addresses:
        old_meta = snapshots.read_meta(redis, cluster.pk)
        proxies = proxy_states(snapshot.proxies, old_meta.proxies if old_meta else [], polled_at)
        proxy_grace.hold(snapshot, ask.known, proxy_grace.restarting(proxies, polled_at))
        # groups with proxy clients now, and those that had some and are unknown now (a proxy
        # failing or restarting): remembered, so the grace applies when the proxy is back
        asked = [g for g, p in snapshot.groups.items() if p.via_proxy or p.proxy_clients]
        asked += [g for g in ask.known if g in snapshot.groups and snapshot.groups[g].online is None]
    unreadable = {p.target for p in snapshot.problems if p.scope == "broker"}
    with stages.timing("DLQ sizes"):
        dlq_counts = await dlq_sizes(client, list(snapshot.groups), skip_brokers=unreadable)
    with stages.timing("lag seconds"):
        lag_times = await lagtime.measure(
            client,
            list(snapshot.groups.values()),
            now_ms=int(polled_at * 1000),
            redis=redis,
            cache_key=snapshots.key(cluster.pk, "lagtime"),
            budget=shared(settings.ROCKETMQ_LAGTIME_BUDGET, share),
        )
    with stages.timing("tag lag"):
        tag_lags = await _tag_lags(client, cluster, snapshot, redis, share)
    with stages.timing("retention"):
        kept = await retention.read(client, snapshot, lag_times, now=polled_at, redis=redis,
                                    cache_key=snapshots.key(cluster.pk, "retention"),
                                    horizon=settings.RETENTION_HORIZON_SECONDS)  # fmt: skip
    reading = PollReading(snapshot=snapshot, polled_at=polled_at, lag_times=lag_times, dlq_counts=dlq_counts,
                          stages=stages, proxies=proxies, tag_lags=tag_lags, retention=kept)  # fmt: skip
    return reading, sorted(set(asked))


async def _tag_lags(client: AdminClient, cluster: Cluster, snapshot, redis, share: float) -> taglag.TagLags:
    groups = list(snapshot.groups.values())
    key = snapshots.key(cluster.pk, "subscriptions")
    taglag.remember(redis, key, groups)
    return await taglag.measure(
        client,
        groups,
        redis=redis,
        cache_key=snapshots.key(cluster.pk, "taglag"),
        budget=shared(settings.ROCKETMQ_TAGLAG_BUDGET, share),
        addresses={s.name: s.address for s in snapshot.brokers.values() if not s.error and s.address},
        remembered=taglag.recall(redis, key, groups),
    )


def proxy_ask(cluster: Cluster, redis, *, part: int | None = None, share: float = 1.0) -> ProxyAsk:
    """What to ask the cluster's proxies this poll: the groups they knew clients of last time
    first, then the others in rotation from where the last poll stopped (each part of a split
    poll rotates through its own groups, with its share of the budget)."""
    if not cluster.proxy_list:
        return ProxyAsk([])
    known = frozenset(
        m.decode() if isinstance(m, bytes) else m for m in redis.smembers(snapshots.key(cluster.pk, "proxy-groups"))
    )
    cursor = int(redis.get(_cursor_key(cluster, part)) or 0)
    return ProxyAsk(cluster.proxy_list, known, shared(settings.ROCKETMQ_PROXY_GROUPS_PER_POLL, share), cursor)


def shared(budget: int | None, share: float) -> int | None:
    """A per-poll budget's part for `share` of the groups (at least one lookup)."""
    return budget if budget is None or share >= 1 else max(1, math.ceil(budget * share))


def remember_proxy_groups(redis, cluster: Cluster, groups: list[str]) -> None:
    pipe = redis.pipeline()
    pipe.delete(snapshots.key(cluster.pk, "proxy-groups"))
    if groups:
        pipe.sadd(snapshots.key(cluster.pk, "proxy-groups"), *groups)
    pipe.execute()


def remember_cursor(redis, cluster: Cluster, cursor: int, *, part: int | None = None) -> None:
    redis.set(_cursor_key(cluster, part), cursor)


def _cursor_key(cluster: Cluster, part: int | None) -> str:
    return snapshots.key(cluster.pk, "proxy-cursor" if part is None else f"proxy-cursor:{part}")


async def in_flight(cluster: Cluster, snapshot) -> tuple[dict[str, int] | None, str | None]:
    """POP messages in flight per group, from every broker's metrics, or None and why: a sum
    that misses a broker would be a smaller number that looks complete."""
    readable = {s.name: s.address for s in snapshot.brokers.values() if not s.error}
    urls = inflight.metrics_urls(cluster.broker_metrics, readable)
    totals, errors = await inflight.read(urls, timeout=settings.ROCKETMQ_BROKER_DEADLINE)
    errors.update({b: "no metrics URL, or the broker itself unreadable" for b in snapshot.brokers if b not in urls})
    if errors:
        return None, METRICS_NOT_READ % {"errors": "; ".join(f"{b}: {e}" for b, e in sorted(errors.items()))}
    return totals, None
