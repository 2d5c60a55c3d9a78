"""The last known offsets of every queue of a cluster, shared by every worker on every host,
and the steps each poll's queue rows get from them.

Each queue row carries what changed since that queue's previous row (with_steps), so the
statistics job needs no per-queue window. That needs the previous row, whichever host wrote
it: the state lives in Redis (RedisOffsets), next to the poll lock that already keeps two polls
of one cluster apart, never on a host's disk. `record_poll` steps a poll against it and commits
the new state with a compare-and-set before the rows are written anywhere; the rows then go to
the history, or to the host's spool if the history cannot be written, already stepped, so they
are the same rows whenever and by whichever host they are written.

When the state cannot vouch for a poll (it was lost while the cluster has history, a poll
older than what it has seen, another poll committed in between, or the poll committed before
it was never confirmed written) the poll is written without steps (history_rows.unstepped):
the job computes that day from the raw offsets, correctly, only more slowly. Nothing is ever
stepped against the wrong previous row.

The commit names its poll as pending until its rows are safe (in the history, or in the
host's spool): a worker that dies between the two leaves it pending, and the next poll, whose
steps would start from rows nobody has, is written without steps instead of counting less.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from .history_rows import SCHEMAS, TIMESTAMP, conform, topic_polls, unstepped

STATE_KEY = ["group", "topic", "broker", "queue_id"]
STATE_SCHEMA = pa.schema(
    [("group", pa.string()), ("topic", pa.string()), ("broker", pa.string()), ("queue_id", pa.int32()),
     ("ts", TIMESTAMP), ("consumer_offset", pa.int64()), ("broker_offset", pa.int64())]
)  # fmt: skip
# the polls a state remembers recording: a poll given again (a retry) is not stepped twice
RECENT_POLLS = 64


@dataclass(frozen=True)
class Recorded:
    """A cluster's state: the offsets, the newest row time seen (ms), the recent poll ids and
    the version a commit must still find."""

    offsets: pa.Table
    newest: int
    recent: tuple[int, ...]
    version: str
    pending: int | None = None  # committed, its rows not yet confirmed written


class RedisOffsets:
    """The state of each cluster in one Redis hash, replaced only by a commit that finds the
    version it read (a Lua compare-and-set: atomic in Redis)."""

    _COMMIT = """
    local current = redis.call('hget', KEYS[1], 'version') or ''
    if current ~= ARGV[1] then return 0 end
    redis.call('hset', KEYS[1], 'version', ARGV[2], 'newest', ARGV[3], 'recent', ARGV[4], 'offsets', ARGV[5],
               'pending', ARGV[6])
    return 1
    """
    _CONFIRM = """
    if redis.call('hget', KEYS[1], 'pending') == ARGV[1] then redis.call('hset', KEYS[1], 'pending', '') end
    return 1
    """

    def __init__(self, redis):
        self.redis = redis

    @staticmethod
    def key(cluster: str) -> str:
        return f"rmqc:history:{cluster}:offsets"

    def read(self, cluster: str) -> Recorded | None:
        raw = self.redis.hgetall(self.key(cluster))
        if not raw:
            return None
        recent = tuple(int(p) for p in raw[b"recent"].split(b",") if p)
        offsets = ipc.open_stream(pa.py_buffer(raw[b"offsets"])).read_all()
        pending = int(raw[b"pending"]) if raw.get(b"pending") else None
        return Recorded(offsets, int(raw[b"newest"]), recent, raw[b"version"].decode(), pending)

    def commit(self, cluster: str, seen: Recorded | None, offsets: pa.Table, newest: int, recent: tuple,
               pending: int | None = None) -> bool:  # fmt: skip
        sink = pa.BufferOutputStream()
        # zstd: 160,000 queues are a few MB instead of tens
        with ipc.new_stream(sink, STATE_SCHEMA, options=ipc.IpcWriteOptions(compression="zstd")) as writer:
            writer.write_table(offsets)
        args = [seen.version if seen else "", uuid.uuid4().hex, newest, ",".join(map(str, recent)),
                sink.getvalue().to_pybytes(), "" if pending is None else str(pending)]  # fmt: skip
        return bool(self.redis.eval(self._COMMIT, 1, self.key(cluster), *args))

    def confirm(self, cluster: str, poll_id: int) -> None:
        """The poll's rows are safe: it is no longer pending (unless another poll is by now)."""
        self.redis.eval(self._CONFIRM, 1, self.key(cluster), str(poll_id))


class MemoryOffsets:
    """The same in this process's memory: one process only (tests, benchmarks, synthetic data)."""

    def __init__(self):
        self.states: dict[str, Recorded] = {}

    def read(self, cluster: str) -> Recorded | None:
        return self.states.get(cluster)

    def commit(self, cluster: str, seen: Recorded | None, offsets: pa.Table, newest: int, recent: tuple,
               pending: int | None = None) -> bool:  # fmt: skip
        current = self.states.get(cluster)
        if (current.version if current else None) != (seen.version if seen else None):
            return False
        self.states[cluster] = Recorded(offsets, newest, recent, uuid.uuid4().hex, pending)
        return True

    def confirm(self, cluster: str, poll_id: int) -> None:
        current = self.states.get(cluster)
        if current is not None and current.pending == poll_id:
            self.states[cluster] = dataclasses.replace(current, pending=None)


def record_poll(state, cluster: str, poll_id: int, tables: dict[str, pa.Table],
                has_history: Callable[[], bool]) -> dict[str, pa.Table] | None:  # fmt: skip
    """This poll's rows ready to write: each queue row stepped since its queue's previous row,
    and the per-topic sums, the state committed first with this poll pending (`state.confirm`
    once its rows are safe). None when this poll was recorded before (given again: its first
    recording's rows are the ones to write). `has_history`: whether the cluster has rows in
    the history already (asked only when there is no state)."""
    tables = {name: conform(t, SCHEMAS[name]) for name, t in tables.items() if t.num_rows}
    queues = tables.get("queue_offsets")
    if queues is None:
        return tables  # no queue row: nothing to step
    seen = state.read(cluster)
    if seen is not None and poll_id in seen.recent:
        return None
    oldest, newest = pc.min(queues["ts"]).value, pc.max(queues["ts"]).value
    if seen is not None and oldest <= seen.newest:
        return unstepped(tables)  # older than rows already stepped from: out of order (a clock set back)
    # no state but history: the state was lost (Redis emptied) or the history predates it; or
    # the poll before this one was committed and its rows may never have been written
    lost = (seen is None and has_history()) or (seen is not None and seen.pending is not None)
    stepped, offsets = with_steps(queues, seen.offsets if seen else None)
    recent = ((seen.recent if seen else ()) + (poll_id,))[-RECENT_POLLS:]
    if not state.commit(cluster, seen, offsets, newest, recent, pending=poll_id) or lost:
        return unstepped(tables)  # another poll committed in between: this one's previous rows are unknown
    tables["queue_offsets"] = stepped
    tables["topic_polls"] = topic_polls(stepped)
    return tables


def with_steps(table: pa.Table, state: pa.Table | None) -> tuple[pa.Table, pa.Table]:
    """Queue rows with what changed since each queue's previous row, and the state for the next
    call: per queue the last row's time and the last known (non-null) offsets.

    The same definitions as the statistics job's window over a queue's rows (transforms.py):
    previous_ts is the previous row's ts; consumed_step / produced_step are the differences to
    the previous *known* offsets (a null offset is skipped, so the next known one carries the
    whole move). One difference, on purpose: the writer remembers a queue across any gap, where
    the job's window saw only the day before, so a move across a gap of days lands on the day
    it was observed instead of being lost. Rows must come in time order across calls."""
    state = STATE_SCHEMA.empty_table() if state is None else state
    if not table.num_rows:
        return table, state
    if table.select(STATE_KEY).group_by(STATE_KEY).aggregate([]).num_rows == table.num_rows:
        # each queue at most once (one poll, its groups read at their own times): a join is
        # enough, several times faster than sorting every queue's rows
        return _steps_of_one_poll(table, state)
    return _steps_of_many_polls(table, state)


def _steps_of_one_poll(table: pa.Table, state: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Each queue at most once: its previous row is the state's."""
    keyed = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    previous = state.rename_columns([*STATE_KEY, "_prev_ts", "_prev_consumer", "_prev_broker"])
    joined = keyed.join(previous, STATE_KEY, join_type="left outer").sort_by("_row")
    table = _set_steps(
        table,
        joined["_prev_ts"],
        pc.subtract(joined["consumer_offset"], joined["_prev_consumer"]),
        pc.subtract(joined["broker_offset"], joined["_prev_broker"]),
    )
    # this poll's queues (a null offset keeps the last known one), and every other as it was
    seen = pa.table({
        **{k: joined[k] for k in STATE_KEY},
        "ts": joined["ts"],
        "consumer_offset": pc.coalesce(joined["consumer_offset"], joined["_prev_consumer"]),
        "broker_offset": pc.coalesce(joined["broker_offset"], joined["_prev_broker"]),
    }, schema=STATE_SCHEMA)  # fmt: skip
    unseen = state.join(table.select(STATE_KEY), STATE_KEY, join_type="left anti")
    return table, pa.concat_tables([seen, unseen.select(STATE_SCHEMA.names).cast(STATE_SCHEMA)])


def _steps_of_many_polls(table: pa.Table, state: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Several rows of a queue at once (tests, backfills): each queue's rows in time order
    after its state."""
    import pandas as pd

    nullable = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get
    rows = table.select(STATE_SCHEMA.names).cast(STATE_SCHEMA).to_pandas(types_mapper=nullable)
    rows["_row"] = range(len(rows))
    prior = state.to_pandas(types_mapper=nullable)
    prior["_row"] = -1  # before this table's rows of the same queue
    both = pd.concat([prior, rows], ignore_index=True).sort_values([*STATE_KEY, "ts", "_row"], kind="stable")
    same_queue = both.groupby(STATE_KEY, sort=False)
    both["_prev_ts"] = same_queue["ts"].shift()
    for column in ("consumer_offset", "broker_offset"):
        both[f"_last_{column}"] = same_queue[column].ffill()
    same_queue = both.groupby(STATE_KEY, sort=False)
    for column in ("consumer_offset", "broker_offset"):
        both[f"_prev_{column}"] = same_queue[f"_last_{column}"].shift()
    ours = both[both["_row"] >= 0].sort_values("_row")
    table = _set_steps(
        table,
        pa.array(ours["_prev_ts"], TIMESTAMP),
        pa.array(ours["consumer_offset"] - ours["_prev_consumer_offset"], pa.int64()),
        pa.array(ours["broker_offset"] - ours["_prev_broker_offset"], pa.int64()),
    )
    last = (
        both.groupby(STATE_KEY, sort=False)
        .agg(ts=("ts", "last"), consumer_offset=("consumer_offset", "last"), broker_offset=("broker_offset", "last"))
        .reset_index()
    )  # "last" skips nulls: the last known offsets
    return table, pa.Table.from_pandas(last[STATE_SCHEMA.names], schema=STATE_SCHEMA, preserve_index=False)


def _set_steps(table: pa.Table, previous_ts, consumed, produced) -> pa.Table:
    columns = {
        "previous_ts": previous_ts,
        "consumed_step": consumed,
        "produced_step": produced,
        "steps": pa.array([True] * table.num_rows, pa.bool_()),
    }
    for name, values in columns.items():
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, values.cast(table.schema.field(name).type))
    return table
