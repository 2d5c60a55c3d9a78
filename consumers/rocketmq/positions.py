"""What a read of consumer groups gives (groups.py reads it): each group's position per topic
and queue across every master of the cluster, with who holds each queue, and what could not be
read: a part that could not be read is listed in the group's `problems` and its numbers stay
None (unknown is not zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .codes import RETRY_PREFIX
from .models import ConsumerConnection, ConsumerRunningInfo, MessageQueue, TopicOffset, shared_queue


@dataclass(slots=True)
class Problem:
    """Something we could not read, and why."""

    scope: str  # route, broker, connection, running-info, topic-stats, group, namesrv, proxy
    target: str  # the broker, client or topic concerned
    error: str
    error_type: str

    @classmethod
    def of(cls, scope: str, target: str, exc: BaseException) -> Problem:
        return cls(scope=scope, target=target, error=str(exc), error_type=type(exc).__name__)


@dataclass(slots=True)
class QueueProgress:
    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    min_offset: int | None
    pull_offset: int | None
    last_consume_time: int | None
    clients: tuple[str, ...] = ()

    @property
    def lag(self) -> int:
        return self.broker_offset - self.consumer_offset

    @property
    def retry(self) -> bool:
        return self.topic.startswith(RETRY_PREFIX)

    @property
    def offset_expired(self) -> bool | None:
        """Consumer offset below the queue's min offset: messages lost to retention."""
        return None if self.min_offset is None else self.consumer_offset < self.min_offset

    @property
    def queue(self) -> MessageQueue:
        # read several times a queue in a poll (lag times, tag lag, retention, documents), each a
        # dict key: shared, not built each time (0.55 s of a 12,500-group poll's profile)
        return shared_queue(self.topic, self.broker_name, self.queue_id)


@dataclass(slots=True)
class GroupProgress:
    group: str
    fetched_at: float
    queues: list[QueueProgress] = field(default_factory=list)
    consume_tps: float | None = None
    connection: ConsumerConnection | None = None
    online: bool | None = None  # None: could not be determined
    # its clients are known only to rocketmq-proxy (RocketMQ 5 gRPC consumers, POP): the broker
    # assigns messages per request, so there is no per-queue holder and no running info
    via_proxy: bool = False
    # mixed groups: clients only a proxy knows (gRPC) beside the ones the brokers know
    proxy_clients: list[str] = field(default_factory=list)
    running_info: dict[str, ConsumerRunningInfo] = field(default_factory=dict)
    brokers: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # min and max offset of every queue seen, also those only the clients report (broadcasting)
    bounds: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    # queues of the topics an online group subscribes to that have no committed offset: the
    # broker's consume stats leave them out, yet they may be exactly the ones nobody consumes
    uncommitted: list[MessageQueue] = field(default_factory=list)
    # its subscription group says consumeMessageOrderly: POP consumers (gRPC FIFO) get each
    # queue's messages in order, one message group at a time. None: the configs were not read
    fifo: bool | None = None
    # the brokers whose subscription config says consumeEnable false (paused: they refuse its
    # pulls and pops). None: the configs were not read
    paused_on: list[str] | None = None
    # topics this group consumes with POP by the brokers' request modes (mqadmin setConsumeMode)
    pop_topics: list[str] = field(default_factory=list)

    @property
    def topics(self) -> list[str]:
        return sorted({q.topic for q in self.queues if not q.retry})

    @property
    def main_queues(self) -> list[QueueProgress]:
        return [q for q in self.queues if not q.retry]

    @property
    def retry_queues(self) -> list[QueueProgress]:
        return [q for q in self.queues if q.retry]

    @property
    def total_lag(self) -> int:
        """Lag of the subscribed topics, without the retry topic."""
        return sum(q.lag for q in self.main_queues)

    @property
    def diff_total(self) -> int:
        """mqadmin's "Consume Diff Total": every row, the retry topic included."""
        return sum(q.lag for q in self.queues)

    @property
    def complete(self) -> bool:
        return not self.problems
