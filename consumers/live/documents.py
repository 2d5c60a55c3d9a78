"""What a poll publishes, as types: the per-group document (`GroupDocument`, with its
`QueueRow`s), the cluster's meta document (`ClusterMeta`, with a `BrokerState` per broker and a
`ProxyState` per proxy) and the group summary the list pages read. building.py makes a group's
document from a poll.

On the wire (Redis, the JSON API) each is plain JSON through `to_wire()` / `from_wire()`.
Every number is as of `as_of` (epoch seconds); parts we could not read in this poll are
carried over from the previous document with their own `as_of` and a `stale_reason`, and a
value never known is None (shown as unknown, never 0).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from .diagnostics import (
    queue_label,
)
from .forecast import DRAIN_FIELDS, Drain
from .health import Health
from .jsonwire import dumps


@dataclass
class QueueRow:
    topic: str
    broker: str
    queue_id: int
    retry: bool
    min: int | None
    max: int | None
    consumer: int | None
    lag: int | None
    lag_seconds: float | None
    lag_seconds_note: str | None
    pull: int | None
    last_consume_ms: int | None
    clients: list[str]
    expired: bool | None
    as_of: float | None
    stale_reason: str | None = None
    # for a group that filters this topic by tags (taglag.py): the messages of `lag` its tags
    # let through, and why that is unknown or an estimate
    tag_lag: int | None = None
    tag_lag_note: str | None = None

    @property
    def label(self) -> str:
        return queue_label(self.topic, self.broker, self.queue_id)


@dataclass
class GroupDocument:
    group: str
    as_of: float | None
    stale: bool = False
    stale_reason: str | None = None
    online: bool | None = None
    clients: int | None = None
    # why who is connected is unknown (online None): the read that failed; None when known
    clients_note: str | None = None
    message_model: str | None = None
    consume_type: str | None = None
    # grpc-simple, grpc-push, push, pull, pop (diagnostics.CONSUMPTION); None: no client known
    consumption: str | None = None
    # not a consumer group: the broker made it when something was sent to this POP retry topic
    # (%RETRY%{group}_{topic}: the broker takes what follows %RETRY% for a group name)
    made_from_retry_topic: str | None = None
    # POP groups: messages taken and not yet acked (the brokers' metrics); None: unknown (why:
    # in_flight_note). Not part of `lag`, which counts only what nobody has taken.
    in_flight: int | None = None
    in_flight_note: str | None = None
    # its subscription group says consumeMessageOrderly (FIFO for POP consumers); None: unknown
    fifo: bool | None = None
    # brokers whose config says consumeEnable false: they refuse the group's pulls (paused)
    paused_on: list[str] | None = None
    # POP groups: what `lag_seconds` measures (only messages nobody has taken yet)
    lag_seconds_measures: str | None = None
    topics: list[str] = field(default_factory=list)
    # per subscribed topic (retry topics apart): {"lag", "lag_seconds"}, None where unknown
    topic_lags: dict[str, dict] = field(default_factory=dict)
    lag: int | None = None
    retry_lag: int | None = None
    lag_seconds: float | None = None
    lag_partial: bool = False
    # why the lag total is not the whole group's (a broker missing or unreadable); None: complete
    lag_incomplete: str | None = None
    # a group that filters by tags: per such topic its expression ("TAG: A || B"), whether that
    # is as last seen (no client online now), and the messages of `lag` its tags let through
    # (None: a queue not counted; its note says why)
    tag_filters: dict[str, str] = field(default_factory=dict)
    tag_filters_as_seen: bool = False
    tag_lag: int | None = None
    tag_lag_estimated: bool = False
    consume_tps: float | None = None
    consume_tps_note: str | None = None
    dlq_count: int | None = None
    queues: list[QueueRow] = field(default_factory=list)
    allocation: dict[str, list[str]] = field(default_factory=dict)
    diagnostics: list[dict] = field(default_factory=list)
    connections: list[dict] = field(default_factory=list)
    broadcast: dict | None = None
    # remoting POP: client -> the queues it pops from, with its unacked count and last pop
    pops: dict[str, list[dict]] = field(default_factory=dict)
    problems: list[dict] = field(default_factory=list)
    warnings: int = 0
    health: dict | None = None
    # when the lag will be consumed (forecast.py): the group's figure, and each lagging queue's
    drain: dict | None = None
    drain_queues: list[dict] = field(default_factory=list)
    # which queues will lose messages to the brokers' retention before the group reaches them
    # (retention.py): state AT_RISK, SAFE or UNKNOWN (reason), the queues with their losses
    retention: dict | None = None

    def to_wire(self) -> dict:
        # shallow on purpose: dataclasses.asdict deep-copies every nested list and dict, which
        # made a 1,000-group poll measurably slower; the parts are plain JSON already
        data = self.__dict__.copy()
        data["queues"] = [q.__dict__.copy() for q in self.queues]
        return data

    def to_stored(self) -> dict:
        """As kept in Redis (the detail hash, a split poll's parts): each queue, and each queue's
        drain figures, a list of values under the field names given once, and the fields left at
        None left out: at 8 lagging queues a group is about 2,800 bytes (3,600 while the drain
        figures repeated their names, 1,500 of them), under half of `to_wire`."""
        data = {k: v for k, v in self.__dict__.items() if v is not None or k not in _NONE_BY_DEFAULT}
        data["queues"] = [list(q.__dict__.values()) for q in self.queues]
        data["queue_fields"] = QUEUE_FIELDS
        if self.drain_queues:
            data["drain_queues"] = [[q.get(n) for n in DRAIN_FIELDS] for q in self.drain_queues]
            data["drain_fields"] = DRAIN_FIELDS
        return data

    @classmethod
    def from_wire(cls, data: dict) -> GroupDocument:
        """From `to_wire`'s form or `to_stored`'s."""
        known = _FIELD_NAMES
        values = {k: v for k, v in data.items() if k in known}
        names = data.get("queue_fields")
        if names is None:
            values["queues"] = [QueueRow(**q) for q in data.get("queues", [])]
        else:  # a field added since it was stored takes its default; one removed is dropped
            values["queues"] = [QueueRow(**{n: v for n, v in zip(names, q, strict=True) if n in _QUEUE_NAMES})
                                for q in data.get("queues", [])]  # fmt: skip
        drain_names = data.get("drain_fields")
        if drain_names is not None:
            values["drain_queues"] = [dict(zip(drain_names, q, strict=True)) for q in data.get("drain_queues", [])]
        return cls(**values)

    def summary(self) -> dict:
        """What the groups list and its filters need, without the per-queue detail."""
        return {name: getattr(self, name) for name in SUMMARY_FIELDS}

    @staticmethod
    def summary_of(stored: dict) -> dict:
        """`summary()` of a stored document, without making it (its queues are most of the work)."""
        return {name: stored[name] if name in stored else _default(name) for name in SUMMARY_FIELDS}

    def encode(self) -> bytes:
        """As the detail hash keeps it: one JSON object, `to_stored`'s, whose summary fields come
        first, after a key "_h" that says where they end (fixed width), so the groups list
        decodes only those of the rows it shows (`summary_from`). Any JSON reader (an older
        release beside this one) reads it whole, "_h" an unknown field it drops."""
        stored = self.to_stored()
        head = dumps({k: v for k, v in stored.items() if k in _SUMMARY_NAMES})
        tail = dumps({k: v for k, v in stored.items() if k not in _SUMMARY_NAMES})
        end = len(_HEAD_MARK) + _HEAD_DIGITS + 2 + len(head) - 2  # the comma after the summary fields
        return b'%s%0*d",' % (_HEAD_MARK, _HEAD_DIGITS, end) + head[1:-1] + b"," + tail[1:]

    @classmethod
    def decode(cls, raw: bytes | str) -> GroupDocument:
        """From `encode`'s bytes, or a document stored without "_h" before."""
        return cls.from_wire(json.loads(raw))

    @staticmethod
    def summary_from(raw: bytes) -> dict:
        """The summary of an encoded document, from its summary fields alone."""
        if raw.startswith(_HEAD_MARK):
            end = int(raw[len(_HEAD_MARK) : len(_HEAD_MARK) + _HEAD_DIGITS])
            return GroupDocument.summary_of(json.loads(raw[:end] + b"}"))
        return GroupDocument.summary_of(json.loads(raw))

    def set_health(self, health: Health) -> GroupDocument:
        self.health = health.to_wire()
        return self

    def set_drain(self, drain: Drain) -> GroupDocument:
        self.drain = drain.to_wire()
        self.drain_queues = [q.to_wire() for q in drain.queues]
        return self


QUEUE_FIELDS = tuple(f.name for f in dataclasses.fields(QueueRow))
_QUEUE_NAMES = frozenset(QUEUE_FIELDS)
_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(GroupDocument))
_NONE_BY_DEFAULT = frozenset(f.name for f in dataclasses.fields(GroupDocument) if f.default is None)

# what the groups list does not need: the per-queue detail, and the group page's clients_note
# (kept out so 10,000 summaries stay as small)
DETAIL_ONLY = ("queues", "allocation", "diagnostics", "connections", "broadcast", "pops", "problems", "consume_type",
               "clients_note", "drain_queues")  # fmt: skip
SUMMARY_FIELDS = tuple(f.name for f in dataclasses.fields(GroupDocument) if f.name not in DETAIL_ONLY)
_SUMMARY_NAMES = frozenset(SUMMARY_FIELDS)
_HEAD_MARK, _HEAD_DIGITS = b'{"_h":"', 8  # encode: '{"_h":"00000123",' then the summary fields
_DEFAULTS = {f.name: f for f in dataclasses.fields(GroupDocument)}


def _default(name: str):
    """A field a stored document leaves out: None left out, or one added since it was stored."""
    found = _DEFAULTS[name]
    return found.default_factory() if found.default_factory is not dataclasses.MISSING else found.default


@dataclass
class BrokerState:
    """A broker as the last poll saw it. `state`: ok, failing (listed but not answering),
    missing (known before, no longer listed by the name server) or unknown (the poll failed as
    a whole, so nothing is known of it now: `error` says why, since `unknown_since`)."""

    name: str
    address: str | None
    cluster: str | None = None
    state: str = "ok"
    version: str | None = None
    put_tps: float | None = None
    get_tps: float | None = None
    boot_ms: int | None = None
    error: str | None = None
    last_seen_at: float | None = None
    missing_since: float | None = None
    unknown_since: float | None = None


@dataclass
class ProxyState:
    """A configured rocketmq-proxy as the last poll saw it: ok, failing (did not answer) or
    unknown (the poll failed as a whole); `groups`: groups whose clients it knows."""

    address: str
    state: str = "ok"
    error: str | None = None
    groups: int | None = None
    last_ok_at: float | None = None
    failing_since: float | None = None
    # the first poll that found it answering again after it failed, or answering with no client
    # where the last poll found some (its client table emptied at once: it restarted between polls)
    restarted_at: float | None = None
    group_names: list[str] = field(default_factory=list)  # the groups counted in `groups`


def proxy_states(statuses: dict, previous: list[ProxyState], polled_at: float) -> list[ProxyState]:
    before = {p.address: p for p in previous}
    states = []
    for address, status in sorted(statuses.items()):
        old = before.get(address)
        if status.error is None:
            back = old is not None and (old.state != "ok" or (old.groups or 0) > 0 and status.groups == 0)
            restarted = polled_at if back else old.restarted_at if old else None
            states.append(
                ProxyState(address, "ok", None, status.groups, polled_at, None, restarted, status.group_names)
            )
        else:
            since = old.failing_since if old and old.state != "ok" and old.failing_since else polled_at
            states.append(ProxyState(address, "failing", status.error, None, old.last_ok_at if old else None, since))
    return states


@dataclass
class ClusterMeta:
    """How the cluster's last poll went. `status`: ok, degraded (a broker missing or failing,
    or part of some group unreadable) or failed (nothing readable)."""

    cluster_id: int
    name: str
    polled_at: float
    duration: float
    status: str
    error: str | None = None
    last_success_at: float | None = None
    groups: int = 0
    groups_incomplete: int = 0
    brokers: list[BrokerState] = field(default_factory=list)
    problems: list[dict] = field(default_factory=list)
    proxies: list[ProxyState] = field(default_factory=list)
    # polls skipped since this meta was written, and why ({since, at, why}); None: none skipped
    skipped: dict | None = None
    # history rows not written yet by the polling host ({pending_polls, since, error, dropped});
    # None: all written
    history: dict | None = None
    # the same for every host whose spool holds polls of this cluster, by host
    spools: dict[str, dict] = field(default_factory=dict)
    # seconds per stage of the poll up to the Redis write (live/stages.py)
    stages: dict = field(default_factory=dict)

    def to_wire(self) -> dict:
        data = self.__dict__.copy()
        data["brokers"] = [b.__dict__.copy() for b in self.brokers]
        data["proxies"] = [p.__dict__.copy() for p in self.proxies]
        return data

    @classmethod
    def from_wire(cls, data: dict) -> ClusterMeta:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["brokers"] = [BrokerState(**b) for b in data.get("brokers", [])]
        values["proxies"] = [ProxyState(**p) for p in data.get("proxies", [])]
        return cls(**values)
