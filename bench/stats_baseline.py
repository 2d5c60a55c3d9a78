"""The statistics job's seven tables for one cluster and one day, computed in this process with
pyarrow and pandas: the baseline `bench_stats` measures Spark against, doing the same work.

It reads the day's rows as written (offsets, not the writer's steps: the per-queue moves come
from sorting each queue's rows by time and differencing, as the job's window does), so its
numbers are also an independent check of the job's. With `topic_rows` it reads the per-topic
polls the poller writes (history schema 3), the input the job reads: the same work as the job. Definitions are those of
consumers/stats/transforms.py; the day has no look-back here (the benchmark writes one day).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

INCIDENT_STATES = ("STALLED", "STOPPED", "FALLING_BEHIND", "OFFSET_EXPIRED")
PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
QUEUE = ["group", "topic", "broker", "queue_id"]


def _read(history: Path, table: str, cluster: str, day: dt.date, columns: list[str]) -> pd.DataFrame:
    location = history / table / f"cluster={cluster}" / f"date={day.isoformat()}"
    found = ds.dataset(str(location), format="parquet").to_table(columns=columns)
    for name in ("group", "topic", "broker", "health"):  # small categoricals, not 92 M strings
        if name in found.column_names:
            found = found.set_column(found.column_names.index(name), name, found[name].dictionary_encode())
    return found.to_pandas()


def _spread(frame: pd.DataFrame, keys: list[str], column: str, prefix: str) -> pd.DataFrame:
    grouped = frame.groupby(keys, observed=True, sort=False)[column]
    parts = {f"{prefix}_min": grouped.min(), f"{prefix}_mean": grouped.mean()}
    for name, fraction in PERCENTILES:
        parts[f"{prefix}_{name}"] = grouped.quantile(fraction)  # linear, as Spark's percentile
    parts[f"{prefix}_max"] = grouped.max()
    return pd.DataFrame(parts)


def topic_polls(queues: pd.DataFrame) -> pd.DataFrame:
    queues = queues.sort_values([*QUEUE, "ts"], kind="stable")
    same_queue = (queues[QUEUE].shift() == queues[QUEUE]).all(axis=1)
    consumed = queues["consumer_offset"].diff().where(same_queue)
    produced = queues["broker_offset"].diff().where(same_queue)
    queues["consumed"] = consumed.clip(lower=0)
    queues["produced"] = produced.clip(lower=0)
    queues["resets"] = (consumed < 0).astype(np.int64)
    lagging = queues["lag"] > 0
    queues["unknown"] = queues["lag"].isna() | (lagging & queues["lag_seconds"].isna())
    queues["lagging_seconds"] = queues["lag_seconds"].where(lagging)
    polls = queues.groupby(["group", "topic", "retry", "ts"], observed=True, sort=False).agg(
        consumed=("consumed", "sum"), produced=("produced", "sum"), resets=("resets", "sum"),
        queues=("queue_id", "size"), unknown=("unknown", "sum"), lag=("lag", "sum"),
        worst=("lagging_seconds", "max"),
    ).reset_index()  # fmt: skip
    return _completed(polls)


def written_topic_polls(polls: pd.DataFrame) -> pd.DataFrame:
    """The history's topic_polls rows (the poller's sums, schema 3), as topic_polls makes them."""
    return _completed(polls.rename(columns={"unknown_queues": "unknown", "worst_lag_seconds": "worst"}))


def _completed(polls: pd.DataFrame) -> pd.DataFrame:
    # a poll with fewer queues than the topic has that day, or an unknown one: lag unknown
    polls["date"] = polls["ts"].dt.date
    most = polls.groupby(["group", "topic", "date"], observed=True)["queues"].transform("max")
    complete = (polls["queues"] == most) & (polls["unknown"] == 0)
    polls["lag"] = polls["lag"].where(complete)
    polls["lag_seconds"] = polls["worst"].fillna(0.0).where(complete)
    polls["hour"] = polls["ts"].dt.floor("h")
    return polls


def _coverage(frame: pd.DataFrame, interval: int, hourly: bool) -> pd.DataFrame:
    expected = (3600 if hourly else 86400) // interval
    frame["expected_polls"] = expected
    frame["coverage"] = np.minimum(1.0, frame["polls"] / expected)
    return frame


def topic_tables(polls: pd.DataFrame, slo: float, interval: int) -> dict[str, pd.DataFrame]:
    result = {}
    for name, period in (("topic_hourly", "hour"), ("topic_daily", "date")):
        keys = [period, "group", "topic", "retry"]
        grouped = polls.groupby(keys, observed=True, sort=False)
        sums = grouped.agg(polls=("ts", "size"), consumed=("consumed", "sum"), produced=("produced", "sum"),
                           resets=("resets", "sum"))  # fmt: skip
        breach = polls.assign(b=polls["lag_seconds"] > slo).groupby(keys, observed=True, sort=False)["b"].sum()
        frame = sums.join([_spread(polls, keys, "lag", "lag"), _spread(polls, keys, "lag_seconds", "lag_seconds")])
        frame["breach_minutes"] = breach * interval / 60.0
        result[name] = _coverage(frame, interval, period == "hour").reset_index()
    return result


def group_polls(groups: pd.DataFrame) -> pd.DataFrame:
    groups = groups.sort_values(["group", "ts"], kind="stable")
    same = groups["group"].eq(groups["group"].shift())
    known_dlq = groups["dlq_count"].groupby(groups["group"], observed=True).ffill()
    previous_dlq = known_dlq.groupby(groups["group"], observed=True).shift()
    moved = (groups["dlq_count"] - previous_dlq).where(same & groups["dlq_count"].notna())
    groups["dlq_arrivals"] = moved.clip(lower=0)
    known = groups["health"].astype(object).where(groups["health"].astype(object) != "UNKNOWN")
    by_group = groups["group"]
    previous_state = known.groupby(by_group, observed=True).ffill().groupby(by_group, observed=True).shift()
    entered = groups["health"].isin(INCIDENT_STATES) & (previous_state.isna() | (previous_state != groups["health"]))
    groups["incidents"] = entered.astype(np.int64)
    groups["lag_seconds"] = groups["lag_seconds_max"]
    groups["date"] = groups["ts"].dt.date
    groups["hour"] = groups["ts"].dt.floor("h")
    return groups


def group_tables(groups: pd.DataFrame, polls: pd.DataFrame, slo: float, interval: int) -> dict[str, pd.DataFrame]:
    result = {}
    for name, period in (("group_hourly", "hour"), ("group_daily", "date")):
        keys = [period, "group"]
        grouped = groups.groupby(keys, observed=True, sort=False)
        own = grouped.agg(polls=("ts", "size"), incidents=("incidents", "sum"), dlq_arrivals=("dlq_arrivals", "sum"))
        breach = groups.assign(b=groups["lag_seconds"] > slo).groupby(keys, observed=True, sort=False)["b"].sum()
        own = own.join([_spread(groups, keys, "lag", "lag"), _spread(groups, keys, "lag_seconds", "lag_seconds")])
        own["breach_minutes"] = breach * interval / 60.0
        retry = polls["retry"]
        split = polls.assign(
            main_consumed=polls["consumed"].where(~retry),
            main_produced=polls["produced"].where(~retry),
            retry_produced=polls["produced"].where(retry),
        )
        flows = split.groupby(keys, observed=True, sort=False).agg(
            consumed=("main_consumed", "sum"), produced=("main_produced", "sum"),
            retries=("retry_produced", "sum"), resets=("resets", "sum"),
        )  # fmt: skip
        result[name] = _coverage(own.join(flows), interval, period == "hour").reset_index()
    return result


def health_minutes(groups: pd.DataFrame, interval: int) -> pd.DataFrame:
    counted = groups.groupby(["hour", "group", "health"], observed=True, sort=False).size().rename("polls")
    frame = counted.reset_index()
    frame["minutes"] = frame["polls"] * interval / 60.0
    return frame


def top_groups(daily: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    ranked = []
    for metric in ("lag_seconds_p95", "breach_minutes", "dlq_arrivals"):
        rows = daily[daily[metric] > 0].assign(value=lambda f, m=metric: f[m].astype(float))
        rows = rows.sort_values(["value", "group"], ascending=[False, True]).head(top)
        ranked.append(rows.assign(metric=metric, rank=range(1, len(rows) + 1))[["group", "metric", "value", "rank"]])
    return pd.concat(ranked, ignore_index=True)


def seven_tables(
    history: Path, cluster: str, day: dt.date, *, interval: int, slo: float, topic_rows: bool = False
) -> dict[str, pd.DataFrame]:
    """`topic_rows`: from the history's per-topic polls (the input the job reads since schema 3)
    instead of differencing the queue rows' offsets."""
    if topic_rows:
        columns = ["ts", "group", "topic", "retry", "queues", "unknown_queues", "lag", "worst_lag_seconds", "consumed",
                   "produced", "resets"]  # fmt: skip
        polls = written_topic_polls(_read(history, "topic_polls", cluster, day, columns))
    else:
        queue_columns = ["ts", "group", "topic", "broker", "queue_id", "retry", "broker_offset", "consumer_offset",
                         "lag", "lag_seconds"]  # fmt: skip
        polls = topic_polls(_read(history, "queue_offsets", cluster, day, queue_columns))
    groups = group_polls(_read(history, "group_stats", cluster, day,
                               ["ts", "group", "lag", "lag_seconds_max", "dlq_count", "health"]))  # fmt: skip
    tables = {**topic_tables(polls, slo, interval), **group_tables(groups, polls, slo, interval)}
    tables["group_health"] = health_minutes(groups, interval)
    tables["cluster_daily"] = pd.DataFrame(
        [{"date": day, "polls": groups["ts"].nunique(), "groups": groups["group"].nunique()}]
    )
    tables["top_groups"] = top_groups(tables["group_daily"])
    return tables
