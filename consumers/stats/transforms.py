"""The nightly statistics as pure PySpark transforms: DataFrames in, DataFrames out.

No Django, no I/O, no session here (job.py reads, calls these, writes; session.py makes the one
session), so the same functions run in tests on hand-made rows, in `local[*]` and on a cluster.

Definitions (docs/operations.md, "Statistics", says the same to operators):
- A poll's rows are the history's rows with one `ts`. Rows of the period plus a look-back
  (the day before) are read, so the first poll of a day is compared with the last of the day
  before: what was consumed across midnight counts on the day it was observed.
- consumed: per queue, the advance of the committed offset since the queue's previous known
  offset. A move backwards is a reset: counted in `resets`, never as consumption. A queue's
  unknown offset (null) is skipped, so the advance across it lands on the next known poll:
  the total is right, nothing is invented. Across a gap in the polls the same holds.
- produced: the same for the broker's max offset. retries: produced on the %RETRY% topic.
- lag and lag seconds at a poll: a topic's lag is the sum over its queues, unknown if any
  queue's is unknown; its lag seconds is the worst lagging queue's. Statistics are over the
  polls of the period with a known value: min, mean, exact percentiles p50/p95/p99 (linear
  interpolation between the two nearest polls, as numpy's default), max.
- minutes (breach, health states): each poll stands for one poll interval of the cluster, so
  minutes = polls x interval / 60. Missing polls count nothing: `coverage` = polls / expected
  polls (the period's length, up to `as_of`, divided by the interval) says how much is known.
- incidents: entries into STALLED, STOPPED, RETENTION_RISK, FALLING_BEHIND or OFFSET_EXPIRED from a different
  known state (the previous poll with a known state, possibly the day before, was in another
  state, or there was none). A poll whose state is UNKNOWN (or missing) neither starts nor ends
  an incident: STALLED, UNKNOWN, STALLED is one incident, as a gap in the polls is.
- dlq arrivals: the advances of the group's DLQ count between polls (a drop, by expiry or
  cleanup, is not an arrival).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

INCIDENT_STATES = ("STALLED", "STOPPED", "RETENTION_RISK", "FALLING_BEHIND", "OFFSET_EXPIRED")
QUEUE_KEY = ("cluster", "group", "topic", "broker", "queue_id")
PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
TOP_N = 10


def period_bounds(first: dt.date, last: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.UTC)
    return start, dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)


def queue_steps(
    queue_offsets: DataFrame, console_resets: DataFrame | None = None, *, written_steps: bool = False
) -> DataFrame:
    """Each queue row with what changed since that queue's previous known row.

    With `written_steps` every row carries the steps its writer computed (history schema 2:
    previous_ts, consumed_step, produced_step, the same definitions): no per-queue window, so
    no sort of every queue's day. Without, they come from a window over the queue's rows.

    `console_resets` (cluster, group, topic, broker, queue_id, started_at, finished_at,
    to_offset) are the resets the console applied: a poll interval holding one is a reset
    whichever way it moved, and only what was consumed after it (consumer offset - to_offset)
    counts. Forward resets made outside the console look like consumption: nothing in the
    offsets tells them apart."""
    if written_steps:
        previous_ts = F.col("previous_ts")
        moves = (F.col("consumed_step").alias("consumer_move"), F.col("produced_step").alias("broker_move"))
    else:
        ordered = Window.partitionBy(*QUEUE_KEY).orderBy("ts")
        before = ordered.rowsBetween(Window.unboundedPreceding, -1)
        previous_ts = F.lag("ts").over(ordered)
        moves = tuple(
            (F.col(column) - F.last(column, ignorenulls=True).over(before)).alias(alias)
            for column, alias in (("consumer_offset", "consumer_move"), ("broker_offset", "broker_move"))
        )
    # the offsets themselves and previous_ts are read only when console resets need them
    frame = queue_offsets.select(
        *QUEUE_KEY, "ts", "retry", "lag", "lag_seconds", "consumer_offset", previous_ts.alias("previous_ts"), *moves
    )
    reset_to = F.lit(None).cast("long")
    if console_resets is not None:
        marks = console_resets.select(
            *(F.col(k).alias(f"reset_{k}") for k in QUEUE_KEY), "started_at", "finished_at", "to_offset"
        )
        inside = (F.col("previous_ts") < F.col("finished_at")) & (F.col("started_at") <= F.col("ts"))
        same_queue = [F.col(k) == F.col(f"reset_{k}") for k in QUEUE_KEY]
        condition = same_queue[0]
        for clause in same_queue[1:]:
            condition = condition & clause
        joined = frame.join(F.broadcast(marks), condition & inside, "left")
        # a row inside two resets' intervals matches both: keep one. Only matched rows (a few)
        # are deduplicated, so the other rows are not shuffled for it
        matched = joined.where(F.col("to_offset").isNotNull()).dropDuplicates([*QUEUE_KEY, "ts"])
        frame = joined.where(F.col("to_offset").isNull()).unionByName(matched)
        reset_to = F.col("to_offset")
    consumer_move, broker_move = F.col("consumer_move"), F.col("broker_move")
    after_reset = F.greatest(F.col("consumer_offset") - reset_to, F.lit(0))
    return frame.select(
        *QUEUE_KEY,
        "ts",
        "retry",
        "lag",
        "lag_seconds",
        F.when(reset_to.isNotNull() & F.col("consumer_offset").isNotNull(), after_reset)
        .when(consumer_move > 0, consumer_move)
        .otherwise(F.when(consumer_move.isNotNull(), F.lit(0)))
        .alias("consumed"),
        F.when(reset_to.isNotNull() | (consumer_move < 0), 1).otherwise(0).alias("resets"),
        F.when(broker_move > 0, broker_move).otherwise(F.when(broker_move.isNotNull(), F.lit(0))).alias("produced"),
    )


def topic_poll_sums(steps: DataFrame) -> DataFrame:
    """One row per group, topic and poll: sums over the queues (the history's topic_polls rows,
    which the writer sums the same way, have these columns once `written_topic_polls` renamed them)."""
    lagging = F.col("lag") > 0
    unknown = F.col("lag").isNull() | (lagging & F.col("lag_seconds").isNull())
    return steps.groupBy("cluster", "group", "topic", "retry", "ts").agg(
        F.sum("consumed").alias("consumed"),
        F.sum("produced").alias("produced"),
        F.sum("resets").alias("resets"),
        F.count(F.lit(1)).alias("queues"),
        F.count(F.when(unknown, 1)).alias("unknown_queues"),
        F.sum("lag").alias("lag_sum"),
        F.max(F.when(lagging, F.col("lag_seconds"))).alias("worst_lag_seconds"),
    )


def written_topic_polls(rows: DataFrame) -> DataFrame:
    """The history's topic_polls rows (schema 3) as topic_poll_sums makes them."""
    return rows.select(
        "cluster",
        "group",
        "topic",
        "retry",
        "ts",
        F.col("consumed").cast("long").alias("consumed"),
        F.col("produced").cast("long").alias("produced"),
        F.col("resets").cast("long").alias("resets"),
        F.col("queues").cast("long").alias("queues"),
        F.col("unknown_queues").cast("long").alias("unknown_queues"),
        F.col("lag").cast("long").alias("lag_sum"),
        F.col("worst_lag_seconds"),
    )


def topic_polls(per_poll: DataFrame) -> DataFrame:
    """The per-poll sums with the topic's lag: unknown when a queue's is, or when the poll has
    fewer queues than the topic has that day (the history leaves out queues it could not read,
    and a partial sum would shrink the number)."""
    same_day = Window.partitionBy("cluster", "group", "topic", F.to_date("ts"))
    complete = (F.col("queues") == F.max("queues").over(same_day)) & (F.col("unknown_queues") == 0)
    return per_poll.select(
        "cluster",
        "group",
        "topic",
        "retry",
        "ts",
        "consumed",
        "produced",
        "resets",
        F.when(complete, F.col("lag_sum")).alias("lag"),
        F.when(complete, F.coalesce(F.col("worst_lag_seconds"), F.lit(0.0))).alias("lag_seconds"),
    )


def _spread(column: str, prefix: str) -> list[Column]:
    """min, mean, exact percentiles and max of a column over a group's rows (nulls skipped).
    For the percentiles the values are gathered sorted, one array (`_spread_out` reads the
    fractions from it): half the time of Spark's `percentile`, which counts each distinct value
    in a hash map and sorts that, on the 92 M-row day's mostly distinct lag seconds."""
    value = F.col(column).cast("double")
    return [
        F.min(value).alias(f"{prefix}_min"),
        F.avg(value).alias(f"{prefix}_mean"),
        F.sort_array(F.collect_list(value)).alias(f"{prefix}{_SORTED}"),
        F.max(value).alias(f"{prefix}_max"),
    ]


_SORTED = "_sorted"


def _percentile(values: Column, fraction: float) -> Column:
    """The exact percentile of a sorted array, interpolated linearly between the two nearest
    values as Spark's `percentile` does, with its arithmetic (lower + (position - floor) *
    (higher - lower)), so the results are equal to the last bit."""
    count = F.size(values)
    position = (count - 1) * F.lit(fraction)
    lower, higher = F.floor(position), F.ceil(position)
    low, high = F.element_at(values, (lower + 1).cast("int")), F.element_at(values, (higher + 1).cast("int"))
    exact = (lower == higher) | (low == high)
    return F.when(count == 0, F.lit(None)).when(exact, low).otherwise(low + (position - lower) * (high - low))


def _spread_out(frame: DataFrame) -> DataFrame:
    """Each `<prefix>_sorted` array of `_spread` as a column per percentile, in its place."""
    columns = []
    for name in frame.columns:
        if name.endswith(_SORTED):
            prefix = name.removesuffix(_SORTED)
            columns += [
                _percentile(F.col(name), fraction).alias(f"{prefix}_{label}") for label, fraction in PERCENTILES
            ]
        else:
            columns.append(F.col(name))
    return frame.select(*columns)


def _with_period(frame: DataFrame, hourly: bool) -> DataFrame:
    frame = frame.withColumn("date", F.to_date(F.col("ts")))
    return frame.withColumn("hour", F.date_trunc("hour", F.col("ts"))) if hourly else frame


def _period_keys(hourly: bool) -> list[str]:
    return ["cluster", "date", "hour"] if hourly else ["cluster", "date"]


def _coverage(frame: DataFrame, clusters: DataFrame, hourly: bool, as_of: dt.datetime) -> DataFrame:
    """Adds expected_polls and coverage; `clusters` has cluster, interval_seconds."""
    start = F.col("hour") if hourly else F.to_timestamp(F.col("date"))
    length = F.lit(3600 if hourly else 86400)
    elapsed = F.least(length, F.unix_timestamp(F.lit(as_of)) - F.unix_timestamp(start))
    expected = F.greatest(F.lit(1), F.floor(elapsed / F.col("interval_seconds")))
    return (
        frame.join(F.broadcast(clusters.select("cluster", "interval_seconds")), "cluster")
        .withColumn("expected_polls", expected.cast("long"))
        .withColumn("coverage", F.least(F.lit(1.0), F.col("polls") / F.col("expected_polls")))
    )


def _minutes(polls: Column) -> Column:
    return polls * F.col("interval_seconds") / 60.0


def topic_aggregates(
    polls: DataFrame, slo: DataFrame, clusters: DataFrame, *, hourly: bool, as_of: dt.datetime
) -> DataFrame:
    """Per group and topic, per hour or per day. `slo` has cluster, group, slo_seconds."""
    keys = [*_period_keys(hourly), "group", "topic", "retry"]
    frame = _with_period(polls, hourly).join(F.broadcast(slo), ["cluster", "group"], "left")
    aggregated = frame.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("polls"),
        F.sum("consumed").alias("consumed"),
        F.sum("produced").alias("produced"),
        F.sum("resets").alias("resets"),
        *_spread("lag", "lag"),
        *_spread("lag_seconds", "lag_seconds"),
        F.count(F.when(F.col("lag_seconds") > F.col("slo_seconds"), 1)).alias("breach_polls"),
    )
    covered = _coverage(_spread_out(aggregated), clusters, hourly, as_of)
    return covered.withColumn("breach_minutes", _minutes(F.col("breach_polls"))).drop("breach_polls")


def group_steps(group_stats: DataFrame) -> DataFrame:
    """Each group row with its DLQ arrivals since the previous known count and whether it
    entered an incident state."""
    ordered = Window.partitionBy("cluster", "group").orderBy("ts")
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    dlq_move = F.col("dlq_count") - F.last("dlq_count", ignorenulls=True).over(before)
    known = F.when(F.col("health") != "UNKNOWN", F.col("health"))
    previous_state = F.last(known, ignorenulls=True).over(before)  # unknown polls are skipped (see the top)
    entered = F.col("health").isin(*INCIDENT_STATES) & (previous_state.isNull() | (previous_state != F.col("health")))
    return group_stats.select(
        "cluster",
        "group",
        "ts",
        "lag",
        "health",
        F.col("lag_seconds_max").alias("lag_seconds"),
        F.when(dlq_move > 0, dlq_move).otherwise(F.when(dlq_move.isNotNull(), F.lit(0))).alias("dlq_arrivals"),
        F.when(entered, 1).otherwise(0).alias("incidents"),
    )


def group_aggregates(
    steps: DataFrame,
    topics: DataFrame,
    slo: DataFrame,
    clusters: DataFrame,
    *,
    hourly: bool,
    as_of: dt.datetime,
) -> DataFrame:
    """Per group, per hour or per day: the group's own polls (lag, health, DLQ) joined with
    its topics' consumed, produced and retries (`topics` from topic_polls)."""
    period = _period_keys(hourly)
    frame = _with_period(steps, hourly).join(F.broadcast(slo), ["cluster", "group"], "left")
    own = frame.groupBy(*period, "group").agg(
        F.count(F.lit(1)).alias("polls"),
        *_spread("lag", "lag"),
        *_spread("lag_seconds", "lag_seconds"),
        F.count(F.when(F.col("lag_seconds") > F.col("slo_seconds"), 1)).alias("breach_polls"),
        F.sum("incidents").alias("incidents"),
        F.sum("dlq_arrivals").alias("dlq_arrivals"),
        F.first("slo_seconds").alias("slo_seconds"),
    )
    flows = (
        _with_period(topics, hourly)
        .groupBy(*period, "group")
        .agg(
            F.sum(F.when(~F.col("retry"), F.col("consumed"))).alias("consumed"),
            F.sum(F.when(~F.col("retry"), F.col("produced"))).alias("produced"),
            # no %RETRY% topic yet means nothing was ever retried: 0, not unknown
            F.coalesce(F.sum(F.when(F.col("retry"), F.col("produced"))), F.lit(0)).alias("retries"),
            F.sum("resets").alias("resets"),
        )
    )
    joined = _spread_out(own).join(flows, [*period, "group"], "left")
    covered = _coverage(joined, clusters, hourly, as_of)
    return covered.withColumn("breach_minutes", _minutes(F.col("breach_polls"))).drop("breach_polls")


def health_minutes(steps: DataFrame, clusters: DataFrame) -> DataFrame:
    """Minutes in each health state per group and hour (the heat-map's cells)."""
    hourly = _with_period(steps.where(F.col("health").isNotNull()), hourly=True)
    counted = hourly.groupBy("cluster", "date", "hour", "group", F.col("health").alias("state")).agg(
        F.count(F.lit(1)).alias("polls")
    )
    with_interval = counted.join(F.broadcast(clusters.select("cluster", "interval_seconds")), "cluster")
    return with_interval.withColumn("minutes", _minutes(F.col("polls"))).drop("interval_seconds")


def cluster_days(group_stats: DataFrame, clusters: DataFrame, as_of: dt.datetime) -> DataFrame:
    """One row per cluster and day with at least one poll: a day without any is a gap, not 0 %
    (the job leaves it alone and names it)."""
    seen = (
        group_stats.withColumn("date", F.to_date("ts"))
        .groupBy("cluster", "date")
        .agg(F.countDistinct("ts").alias("polls"), F.countDistinct("group").alias("groups"))
    )
    return _coverage(seen, clusters, False, as_of)


def top_groups(daily_groups: DataFrame) -> DataFrame:
    """Cluster-wide top lists per day: p95 lag seconds, breach minutes, DLQ arrivals."""
    ranked = None
    for metric in ("lag_seconds_p95", "breach_minutes", "dlq_arrivals"):
        column = F.col(metric).cast("double")
        ordered = Window.partitionBy("cluster", "date").orderBy(F.col("value").desc(), F.col("group"))
        frame = (
            daily_groups.where(column > 0)
            .select("cluster", "date", "group", F.lit(metric).alias("metric"), column.alias("value"))
            .withColumn("rank", F.row_number().over(ordered))
            .where(F.col("rank") <= TOP_N)
        )
        ranked = frame if ranked is None else ranked.unionByName(frame)
    return ranked


def in_period(frame: DataFrame, start: dt.datetime, end: dt.datetime) -> DataFrame:
    return frame.where((F.col("ts") >= F.lit(start)) & (F.col("ts") < F.lit(end)))


def _deduplicated(frame: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """A compaction racing with a flush can leave a poll's row in two files: keep one."""
    return frame.dropDuplicates([*keys, "ts"])


def _topic_sums(queue_offsets, topic_rows, console_resets, *, start, end, written_steps, deduplicated) -> DataFrame:
    """The per-poll sums of every topic: from the writer's topic_polls rows when given (a topic
    with a console reset in the period is summed from its queue rows instead: the reset's
    interval needs each queue's offsets), else from the queue rows."""
    if written_steps:
        queue_offsets = in_period(queue_offsets, start, end)
    if topic_rows is not None:
        sums = written_topic_polls(in_period(topic_rows, start, end))
        sums = sums if deduplicated else _deduplicated(sums, ("cluster", "group", "topic"))
        if console_resets is None:
            return sums
        touched = F.broadcast(console_resets.select("cluster", "group", "topic").distinct())
        # the groups as literals too: Parquet skips the row groups of other groups (the files are
        # sorted by group), where the join alone would read every queue row
        names = sorted({row.group for row in console_resets.select("group").collect()})
        queue_offsets = queue_offsets.where(F.col("group").isin(names))
        queue_offsets = queue_offsets.join(touched, ["cluster", "group", "topic"], "left_semi")
        redone = _topic_sums(queue_offsets, None, console_resets, start=start, end=end, written_steps=written_steps,
                             deduplicated=deduplicated)  # fmt: skip
        return sums.join(touched, ["cluster", "group", "topic"], "left_anti").unionByName(redone)
    if written_steps and deduplicated:
        # no window, and no poll in two files: no shuffle of the queue rows at all, only the
        # per-topic sums (partial aggregation shrinks them 16-fold before they move)
        queues = queue_offsets
    else:
        # one shuffle serves the per-queue window and the per-topic sums after it: a hash
        # partitioning on (cluster, group, topic) also clusters every finer key
        queues = _deduplicated(queue_offsets.repartition("cluster", "group", "topic"), QUEUE_KEY)
    return topic_poll_sums(queue_steps(queues, console_resets, written_steps=written_steps))


def statistics(
    queue_offsets: DataFrame,
    group_stats: DataFrame,
    clusters: DataFrame,
    slo: DataFrame,
    *,
    first: dt.date,
    last: dt.date,
    as_of: dt.datetime,
    console_resets: DataFrame | None = None,
    topic_rows: DataFrame | None = None,
    written_steps: bool = False,
    deduplicated: bool = False,
    on_prepared=None,
) -> dict[str, DataFrame]:
    """Every output table for the days first..last. The inputs hold those days and the day
    before (the look-back); `clusters` is cluster, interval_seconds, slo_seconds (the default
    SLO) and `slo` the per-group overrides (cluster, group, slo_seconds). `written_steps`: every
    queue row of the period carries its steps (see queue_steps), so the look-back's queue rows
    are not needed. `topic_rows`: the history's topic_polls rows, when every poll of the period
    has them (history schema 3): the queue rows are then read only for console resets.
    `on_prepared` is called with the two cached intermediate frames (the per-topic and the
    per-group polls) before the tables are built on them (the job times them)."""
    start, end = period_bounds(first, last)
    sums = _topic_sums(queue_offsets, topic_rows, console_resets, start=start, end=end, written_steps=written_steps,
                       deduplicated=deduplicated)  # fmt: skip
    groups = group_stats if deduplicated else _deduplicated(group_stats, ("cluster", "group"))
    slo_by_group = (
        groups.select("cluster", "group")
        .distinct()
        .join(F.broadcast(clusters.select("cluster", F.col("slo_seconds").alias("default_slo"))), "cluster")
        .join(F.broadcast(slo), ["cluster", "group"], "left")
        .select("cluster", "group", F.coalesce("slo_seconds", "default_slo").alias("slo_seconds"))
    )
    polls = in_period(topic_polls(sums), start, end).cache()
    steps = in_period(group_steps(groups), start, end).cache()
    if on_prepared is not None:
        on_prepared({"topic polls": polls, "group polls": steps})
    tables = {
        "topic_hourly": topic_aggregates(polls, slo_by_group, clusters, hourly=True, as_of=as_of),
        "topic_daily": topic_aggregates(polls, slo_by_group, clusters, hourly=False, as_of=as_of),
        "group_hourly": group_aggregates(steps, polls, slo_by_group, clusters, hourly=True, as_of=as_of),
        "group_daily": group_aggregates(steps, polls, slo_by_group, clusters, hourly=False, as_of=as_of),
        "group_health": health_minutes(steps, clusters),
        "cluster_daily": cluster_days(in_period(groups, start, end), clusters, as_of),
    }
    tables["group_daily"] = tables["group_daily"].cache()  # the top lists are ranked from it
    tables["top_groups"] = top_groups(tables["group_daily"])
    return tables
