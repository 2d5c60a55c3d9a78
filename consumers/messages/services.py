"""What the message pages and their API ask of a cluster: a search, one message, its track.

Each runs its broker work through `run_on_cluster` (one deadline, the cluster's credentials)
and adds what the console itself keeps: the last poll's view of each group (live snapshots in
Redis) and the redrives of a dead letter (dlq.models.RedrivenMessage)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from ..clusters.connect import run_on_cluster
from ..dlq import selectors as dlq_selectors
from ..identity import EVERYTHING, Scope
from ..jobs.redis_client import get_redis
from ..models import Cluster
from ..rocketmq import TopicNotFound
from ..rocketmq.ops.messages import Located
from ..skips import selectors as skip_selectors
from . import lookup, selectors
from .forms import Search
from .track import Tracking, track
from .verdicts import Skip


class NoSuchTopic(LookupError):
    """The cluster has no such topic (the name server knows no route for it)."""


class MessageNotFound(LookupError):
    """No message at that position; the message says why."""


@dataclass
class Result:
    found: lookup.Found | None = None
    page: lookup.TimePage | None = None


def find(cluster: Cluster, search: Search, scope: Scope = EVERYTHING) -> Result:
    """Raises NoSuchTopic (for a topic outside `scope` too: its name does not leak),
    RocketMQError (the cluster could not be read). Messages found by id are those of the
    topics `scope` sees."""
    if search.topic:
        require_topic(cluster, search.topic, scope)

    visible = None
    if not scope.everything:
        visible = functools.cache(lambda topic: selectors.topic_visible(cluster, topic, scope))

    async def work(client):
        if search.by == "id":
            return Result(await lookup.find_by_id(client, search.msg_id, search.topic or None, visible))
        if search.by == "key":
            found = await lookup.find_by_key(client, search.topic, search.key, search.since_ms or 0, search.until_ms)
            return Result(found)
        if search.by == "offset":
            return Result(await lookup.find_at(client, search.topic, search.broker, search.queue_id, search.offset))
        page = await lookup.read_time_page(client, search.topic, search.since_ms, search.until_ms,
                                           cursor=search.cursor)  # fmt: skip
        return Result(page=page)

    result = _on_topic(cluster, search.topic, work)
    if result.found is not None and visible is not None:
        result.found.messages = [m for m in result.found.messages if visible(m.message.topic)]
    return result


def require_topic(cluster: Cluster, topic: str, scope: Scope) -> None:
    """NoSuchTopic for a topic outside `scope`, as for one that is not there."""
    if not scope.everything and not selectors.topic_visible(cluster, topic, scope):
        raise no_such_topic(cluster, topic)


def no_such_topic(cluster: Cluster, topic: str) -> NoSuchTopic:
    return NoSuchTopic(_("the cluster %(cluster)s has no topic %(topic)s") % {"cluster": cluster.name, "topic": topic})


def message(
    cluster: Cluster, topic: str, broker: str, queue_id: int, offset: int, scope: Scope = EVERYTHING
) -> Located:
    """Raises MessageNotFound, NoSuchTopic (a topic outside `scope` too), RocketMQError."""
    require_topic(cluster, topic, scope)
    found = _on_topic(cluster, topic, lambda c: lookup.find_at(c, topic, broker, queue_id, offset))
    if not found.messages:
        raise MessageNotFound(_("no message at %(where)s: %(why)s") % {"where": found.how, "why": found.note})
    return found.messages[0]


def track_message(cluster: Cluster, found: Located, scope: Scope = EVERYTHING) -> Tracking:
    """The message's track through every group of its topic (that `scope` sees), with the last
    poll's view of each group and the console's redrives of its dead letters."""
    m = found.message
    hints = selectors.hints(get_redis(), cluster, m.topic, found.broker, m.queue_id)
    skipped = skip_selectors.covering(cluster, m.topic, found.broker, m.queue_id, m.queue_offset)
    skips = {group: Skip(change, key) for group, (change, key) in skipped.items()}
    tracking = run_on_cluster(
        cluster,
        lambda c: track(c, found, hints=hints, proxies=cluster.proxy_list, trace_topic=settings.ROCKETMQ_TRACE_TOPIC,
                        skips=skips),
    )  # fmt: skip
    if not scope.everything:
        tracking.groups = [g for g in tracking.groups if scope.sees_group(cluster.name, g.group)]
        if tracking.trace is not None:
            tracking.trace.consumed = [c for c in tracking.trace.consumed if scope.sees_group(cluster.name, c.group)]
    for group in tracking.groups:
        dead = [c for c in group.copies if c.kind == "dlq"]
        if not dead:
            continue
        records = dlq_selectors.redrive_status(cluster, group.group, [(c.broker, c.queue_id, c.offset) for c in dead])
        for copy in dead:
            copy.redrives = [
                {"job": r.job_id, "sent_at": r.sent_at.isoformat(), "target_topic": r.target_topic}
                for r in records.get(f"{copy.broker}#{copy.queue_id}:{copy.offset}", [])
            ]
    return tracking


def _on_topic(cluster: Cluster, topic: str, work):
    try:
        return run_on_cluster(cluster, work)
    except TopicNotFound:
        raise no_such_topic(cluster, topic) from None
