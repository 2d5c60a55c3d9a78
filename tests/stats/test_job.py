"""The statistics job over the hand-worked history (handworked.py): every number below was
worked out by hand from those rows, not taken from the job's output."""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.stats import job, transforms
from tests.stats import handworked as hw

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["schema 3", "schema 2", "schema 1"])
def store_paths(request, tmp_path_factory):
    """The hand-worked history as the poller writes it now (each queue row with its steps since
    the queue's previous row, and each poll's per-topic sums: the job reads those), as it was
    written before history schema 3 (no per-topic sums: the job sums the queue rows) and before
    schema 2 (no steps: the job computes them with its per-queue window). Every number below
    must come out the same in the three ways."""
    root = tmp_path_factory.mktemp("stats")
    if request.param in ("schema 3", "schema 2"):
        HistoryStore(root / "history", state=MemoryOffsets()).append("c1", hw.history_tables())
        if request.param == "schema 2":
            shutil.rmtree(root / "history" / "topic_polls")
            for part in (root / "history" / "group_stats").rglob("*.parquet"):
                pq.write_table(pq.read_table(part).drop_columns(["topic_polls"]), part)
    else:
        for name, table in hw.history_tables().items():
            old = table.select([c for c in table.column_names if c not in ADDED_AFTER_SCHEMA_1])
            dates = pc.strftime(old["ts"], format="%Y-%m-%d")
            for date in pc.unique(dates).to_pylist():
                partition = root / "history" / name / "cluster=c1" / f"date={date}"
                partition.mkdir(parents=True)
                pq.write_table(old.filter(pc.equal(dates, date)), partition / "part-0.parquet")
    (root / "variant").write_text(request.param)
    return root / "history", root / "stats"


ADDED_AFTER_SCHEMA_1 = ("previous_ts", "consumed_step", "produced_step", "steps", "topic_polls")


def params(history, output, first=hw.DAY, last=hw.DAY):
    return {
        "history": str(history),
        "output": str(output),
        "first": first.isoformat(),
        "last": last.isoformat(),
        "as_of": "2026-11-25T00:00:00+00:00",
        "clusters": hw.CLUSTERS,
        "slo_overrides": hw.SLO_OVERRIDES,
    }


def rows(output, table, **where) -> list[dict]:
    found = ds.dataset(str(output / table), format="parquet", partitioning="hive").to_table().to_pylist()
    matching = [r for r in found if all(str(r.get(k)) == str(v) for k, v in where.items())]
    return sorted(matching, key=lambda r: tuple(str(r.get(k)) for k in ("cluster", "date", "hour", "group", "topic")))


@pytest.fixture(scope="module")
def computed(spark, store_paths):
    history, output = store_paths
    summary = job.run(spark, params(history, output))
    # the job takes the writer's steps when every row of the period has them, and its topic
    # polls when every group row says they were written
    variant = (history.parent / "variant").read_text()
    assert summary["written_steps"] is (variant != "schema 1")
    assert summary["written_topic_polls"] is (variant == "schema 3")
    return output, summary


def one(items: list[dict]) -> dict:
    assert len(items) == 1, items
    return items[0]


def test_group_day_worked_by_hand(computed):
    output, _ = computed
    g1 = one(rows(output, "group_daily", cluster="c1", group="g1"))
    assert g1["polls"] == 5 and g1["expected_polls"] == 1440
    assert g1["coverage"] == pytest.approx(5 / 1440)
    # 5 (t1, across midnight) + 0 (reset) + 5 + unknown + 15 on queue 0; 0 + 1 + 0 + 2 on queue 1
    assert g1["consumed"] == 28
    assert g1["produced"] == 14  # 2 + 3 + 0 + 5 + 1 and 1 + 0 + 2 + 0
    assert g1["retries"] == 4  # %RETRY%g1 max offset 0 -> 3 -> 4
    assert g1["resets"] == 1
    assert g1["dlq_arrivals"] == 5  # 0, +2, 0, a drop (not an arrival), +3
    assert g1["incidents"] == 2  # into FALLING_BEHIND at t2, into STALLED at t4
    # lag known at t1, t2, t5: 8, 25, 11
    assert (g1["lag_min"], g1["lag_max"], g1["lag_p50"]) == (8, 25, 11)
    assert g1["lag_mean"] == pytest.approx(44 / 3)
    assert g1["lag_p95"] == pytest.approx(11 + 0.9 * 14)
    assert g1["lag_p99"] == pytest.approx(11 + 0.98 * 14)
    # lag seconds 4, 50, 2; only 50 is above the 30 s SLO: one poll of 60 s
    assert g1["lag_seconds_p50"] == 4 and g1["lag_seconds_max"] == 50
    assert g1["lag_seconds_p95"] == pytest.approx(4 + 0.9 * 46)
    assert g1["breach_minutes"] == 1 and g1["slo_seconds"] == 30


def test_group_override_and_first_sight(computed):
    output, _ = computed
    g2 = one(rows(output, "group_daily", cluster="c1", group="g2"))
    assert g2["slo_seconds"] == 100 and g2["breach_minutes"] == 0  # 80 s is under its own SLO
    assert g2["consumed"] == 10 and g2["produced"] == 20  # its first poll has nothing to compare with
    assert g2["retries"] == 0 and g2["dlq_arrivals"] is None  # never retried; DLQ count never read
    assert (g2["lag_p50"], g2["lag_p95"], g2["lag_seconds_p99"]) == (5, pytest.approx(9.5), pytest.approx(79.2))


def test_hours_split_the_day(computed):
    output, _ = computed
    hours = rows(output, "group_hourly", cluster="c1", group="g1")
    assert [(h["hour"].hour, h["polls"], h["consumed"], h["expected_polls"]) for h in hours] == [
        (0, 4, 11, 60),
        (1, 1, 17, 60),
    ]
    health = rows(output, "group_health", cluster="c1", group="g1")
    cells = sorted((h["hour"].hour, h["state"], h["minutes"]) for h in health)
    assert cells == [(0, "FALLING_BEHIND", 2), (0, "OK", 1), (0, "STALLED", 1), (1, "OK", 1)]


def test_topic_lag_unknown_when_a_queue_is(computed):
    output, _ = computed
    topic = one(rows(output, "topic_daily", cluster="c1", group="g1", topic="T"))
    # t3 misses queue 1 and t4 has queue 0 unknown: only t1 (8), t2 (25), t5 (11) count
    assert (topic["polls"], topic["lag_min"], topic["lag_max"], topic["lag_p50"]) == (5, 8, 25, 11)
    assert (topic["consumed"], topic["produced"], topic["resets"]) == (28, 14, 1)
    assert topic["lag_seconds_max"] == 50 and topic["breach_minutes"] == 1
    retry = one(rows(output, "topic_daily", cluster="c1", group="g1", topic="%RETRY%g1"))
    assert retry["retry"] is True and (retry["produced"], retry["consumed"]) == (4, 4)


def test_cluster_days_and_top_lists(computed):
    output, summary = computed
    c1 = one(rows(output, "cluster_daily", cluster="c1"))
    assert (c1["polls"], c1["groups"], c1["expected_polls"]) == (5, 2, 1440)
    # c2 was never polled: a gap (no row, named in the summary), not a day of 0 % coverage
    assert rows(output, "cluster_daily", cluster="c2") == []
    assert summary["skipped"] == [{"cluster": "c2", "date": hw.DAY.isoformat(),
                                   "why": f"no poll of this cluster on {hw.DAY} in the history"}]  # fmt: skip
    assert summary["computed"] == [{"cluster": "c1", "date": hw.DAY.isoformat()}]
    top = rows(output, "top_groups", cluster="c1")
    by_metric = {
        m: [(r["rank"], r["group"]) for r in sorted(top, key=lambda r: r["rank"]) if r["metric"] == m]
        for m in ("lag_seconds_p95", "breach_minutes", "dlq_arrivals")
    }
    assert by_metric == {
        "lag_seconds_p95": [(1, "g2"), (2, "g1")],  # 76 s against 45.4 s
        "breach_minutes": [(1, "g1")],
        "dlq_arrivals": [(1, "g1")],
    }
    # the day before and the day after were read (t0) or not at all (t6), never written
    assert {r["date"] for r in rows(output, "group_daily")} == {hw.DAY.isoformat()}
    if summary["written_topic_polls"]:  # g1's T at t0..t5, its %RETRY% topic at t0..t5, g2's T at t1, t2
        assert summary["input_rows"] == {"topic_polls": 6 + 6 + 2, "group_stats": 8}
    else:
        assert summary["input_rows"] == {"queue_offsets": 19, "group_stats": 8}
    assert sorted((r["group"], r["consumed"]) for r in summary["group_daily"]) == [("g1", 28), ("g2", 10)]


def current_schema_only(history: Path) -> None:
    """How a rerun writes its output does not depend on the schema the history was written in:
    such tests run over the current one (each Spark job here costs ~10-20 s of CI time)."""
    if (history.parent / "variant").read_text() != "schema 3":
        pytest.skip("output writing: checked over the current history schema")


def test_rerun_gives_equal_rows_and_keeps_other_days(spark, computed, store_paths):
    output, _ = computed
    history, _ = store_paths
    current_schema_only(history)
    before = {t: rows(output, t) for t in job.SUMMARY_TABLES + ("topic_hourly", "top_groups")}
    job.run(spark, params(history, output))
    after = {t: rows(output, t) for t in before}
    assert after == before
    # a run for another day adds its partitions and leaves D's alone; its rows out are its own
    following = hw.DAY + dt.timedelta(days=1)
    summary = job.run(spark, params(history, output, first=following, last=following))
    assert rows(output, "group_daily", date=hw.DAY) == before["group_daily"]
    assert summary["output_rows"]["group_daily"] == 1 and summary["output_rows"]["cluster_daily"] == 1
    assert not (output / "_staging").exists() or not any((output / "_staging").iterdir())
    next_day = one(rows(output, "group_daily", group="g1", date=hw.DAY + dt.timedelta(days=1)))
    assert next_day["consumed"] == 500 - 110 + 0  # queue 0 from t5 to t6; queue 1 has no row on that day
    assert next_day["incidents"] == 1  # OK at t5, STALLED at t6


def files(root: Path) -> dict[str, str]:
    return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in root.rglob("*.parquet")}


def test_a_rerun_without_history_changes_nothing(spark, store_paths, tmp_path):
    history, _ = store_paths
    current_schema_only(history)
    output = tmp_path / "stats"
    job.run(spark, params(history, output))
    before = files(output)
    assert any(name.startswith("cluster_daily/cluster=c1/date=") for name in before)
    # the history has expired since; the store's lock folder is all that is left of it
    gone = tmp_path / "history"
    (gone / "_locks").mkdir(parents=True)
    (gone / "_locks" / "c1.lock").touch()
    later = {"history_retention_days": 30, "as_of": "2027-01-30T00:00:00+00:00"}
    summary = job.run(spark, {**params(gone, output), **later})
    assert summary["computed"] == [] and summary["output_rows"] == {}
    assert {s["why"] for s in summary["skipped"]} == {f"no history for {hw.DAY}: the history is kept 30 days"}
    assert files(output) == before  # byte for byte


def test_unknown_polls_neither_start_nor_end_an_incident(spark):
    states = ["OK", "STALLED", "UNKNOWN", "STALLED", None, "STALLED", "OK", "UNKNOWN", "OK", "UNKNOWN", "STOPPED"]
    frame = spark.createDataFrame(
        [("c1", "g", hw.at(0, 0, n), None, state, None, None) for n, state in enumerate(states)],
        "cluster string, `group` string, ts timestamp, lag bigint, health string, lag_seconds_max double, "
        "dlq_count bigint",
    )
    entered = [r.incidents for r in transforms.group_steps(frame).orderBy("ts").collect()]
    # into STALLED at 1 (one incident through the unknown polls), into STOPPED from OK at 10
    assert entered == [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]


def test_missing_history_location_fails(spark, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        job.run(spark, params(tmp_path / "nowhere", tmp_path / "out"))


def test_a_console_reset_forwards_is_a_reset_not_consumption(spark, store_paths, tmp_path):
    history, _ = store_paths
    # g2's queue 0 went 10 -> 20 between t1 and t2; the console had moved it to 18 in between:
    # 2 messages were consumed, 8 were skipped by the reset
    reset = {"cluster": "c1", "group": "g2", "topic": "T", "broker": "b1", "queue_id": 0, "to_offset": 18,
             "started_at": hw.at(0, 0, 0).replace(second=20).isoformat(),
             "finished_at": hw.at(0, 0, 0).replace(second=21).isoformat()}  # fmt: skip
    job.run(spark, {**params(history, tmp_path), "console_resets": [reset]})
    g2 = one(rows(tmp_path, "group_daily", group="g2"))
    assert (g2["consumed"], g2["resets"], g2["produced"]) == (2, 1, 20)
    g1 = one(rows(tmp_path, "group_daily", group="g1"))
    assert (g1["consumed"], g1["resets"]) == (28, 1)  # other groups unchanged


def test_percentiles_from_the_sorted_values_equal_sparks_percentile_to_the_last_bit(spark):
    """The spreads gather each group's values sorted and interpolate themselves (twice as fast):
    they must give what Spark's exact `percentile` gives, over nulls, ties, one value and none."""
    import random

    from pyspark.sql import functions as F

    rnd = random.Random(5)
    rows = [(f"g{i % 40}", rnd.choice([None, rnd.random() * 1000, float(rnd.randint(0, 9))])) for i in range(4000)]
    rows += [("one", 7.25), ("none", None), ("ties", 3.0), ("ties", 3.0), ("ties", 3.0)]
    frame = spark.createDataFrame(rows, "g string, v double")
    ours = transforms._spread_out(frame.groupBy("g").agg(*transforms._spread("v", "v")))
    fractions = [f for _, f in transforms.PERCENTILES]
    theirs = frame.groupBy("g").agg(F.percentile("v", fractions).alias("p"))
    mine = {r.g: [r.v_p50, r.v_p95, r.v_p99] for r in ours.collect()}
    spark_says = {r.g: list(r.p) if r.p is not None else [None] * 3 for r in theirs.collect()}
    assert mine == spark_says  # exact equality, floats included
    assert mine["one"] == [7.25] * 3 and mine["none"] == [None] * 3 and mine["ties"] == [3.0] * 3
