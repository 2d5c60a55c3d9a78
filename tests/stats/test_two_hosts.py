"""Two worker hosts poll one real cluster in turn into one shared history: two processes, each
with its own VAR_DIR and spool, the production poll path, one HISTORY_URL (host b reaches it
through a mount that goes away for a while, so its polls wait in its spool and are written
later). Every poll is in the history exactly once (counted per poll id), and the statistics job
over it gives what it gives over the same polls written by one host alone."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pytest
from django.conf import settings
from django.db import connection

from consumers.live import snapshots
from consumers.live.history import HistoryStore, MemoryOffsets
from consumers.live.history_files import cover, list_partitions, open_location
from consumers.models import Cluster
from consumers.stats import job

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

POLLS = 16  # eight a host, about two seconds apart
UNMOUNTED = range(5, 11)  # host b's history unreachable for these turns: its polls 5, 7 and 9 spooled

HOST = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import django; django.setup()
    import pyarrow.ipc as ipc
    from consumers.live import publish
    from consumers.live.config import history_store
    from consumers.live.poll import poll_cluster
    from consumers.models import Cluster

    kept, write_history, polls = Path(sys.argv[2]), publish.write_history, []

    def keeping(spool, store, cluster, polled_at, tables, previous):
        # each poll's rows as read, for the run over the same polls written by one host
        folder = kept / str(int(polled_at * 1000))
        folder.mkdir(parents=True)
        for name, table in tables.items():
            with ipc.new_file(folder / f"{name}.arrow", table.schema) as writer:
                writer.write_table(table)
        polls.append(int(polled_at * 1000))
        return write_history(spool, store, cluster, polled_at, tables, previous)

    publish.write_history = keeping
    cluster = Cluster.objects.get(pk=int(sys.argv[1]))
    for line in sys.stdin:
        if line.strip() == "poll":
            status = poll_cluster(cluster).status
            print(json.dumps({"status": status, "poll": polls[-1] if polls else None}), flush=True)
        elif line.strip() == "compact":
            print(json.dumps({"merged": history_store().compact(cluster.name)}), flush=True)
""")


class Host:
    def __init__(self, name: str, base: Path, history: str, cluster: Cluster, kept: Path, redis_url: str):
        base.mkdir()
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))},
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",  # the test database
            "VAR_DIR": str(base / "var"),  # the spool is under it: this host's own
            "HISTORY_URL": history,
            "REDIS_URL": redis_url,
            "SECRET_KEY": "two-hosts-" + "k" * 50,
            "DEBUG": "true",
        }
        self.name, self.spool = name, base / "var" / "history-spool" / cluster.name
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-c", HOST, str(cluster.pk), str(kept)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=open(base / "stderr.log", "w"), text=True, cwd=settings.BASE_DIR,
            env=environment,
        )  # fmt: skip
        self.log = base / "stderr.log"

    def send(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def answer(self) -> dict:
        while line := self.process.stdout.readline():
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError(f"host {self.name} ended: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(30)


def statistics(spark, clusters: list[str], interval: int, inputs, as_of: dt.datetime, output: Path) -> dict:
    """The job's tables for today, per cluster (its rows without the cluster's name)."""
    day = as_of.date()
    params = {
        "history": inputs.root, "history_files": inputs.files, "deduplicated": inputs.deduplicated,
        "output": str(output), "first": day.isoformat(), "last": day.isoformat(), "as_of": as_of.isoformat(),
        "clusters": [{"cluster": name, "interval_seconds": interval, "slo_seconds": 60.0} for name in clusters],
    }  # fmt: skip
    summary = job.run(spark, params)
    tables = {name: {} for name in clusters}
    for table in summary["output_rows"]:
        for row in ds.dataset(str(output / table), format="parquet", partitioning="hive").to_table().to_pylist():
            # the same numbers; a mean may differ in its last bits with the order Spark added rows in
            plain = {k: round(v, 9) if isinstance(v, float) else v for k, v in row.items() if k != "cluster"}
            tables[row["cluster"]].setdefault(table, []).append(plain)
    return {
        name: {t: sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str)) for t, rows in found.items()}
        for name, found in tables.items()
    }


def test_two_hosts_polling_a_real_cluster_in_turn_keep_one_whole_history(
    spark, traffic, namesrv, create_topic, redis, tmp_path, settings
):
    started = time.monotonic()
    suffix = uuid.uuid4().hex[:6]
    topic = create_topic(f"T-hosts-{suffix}")
    traffic.consume(f"G-hosts-{suffix}", topic, mode="healthy")
    traffic.produce(topic, 20 * 90, rate=20, wait=False)  # moving offsets while the hosts poll
    cluster = Cluster.objects.create(name=f"hosts-{suffix}", namesrv_addrs=namesrv, poll_interval=2)
    shared, kept = tmp_path / "history", tmp_path / "polls-as-read"
    shared.mkdir()
    (tmp_path / "unmounted").write_text("not a folder")
    mount = tmp_path / "host-b-mount"
    mount.symlink_to(shared)
    hosts = [Host("a", tmp_path / "host-a", str(shared), cluster, kept, settings.REDIS_URL),
             Host("b", tmp_path / "host-b", str(mount), cluster, kept, settings.REDIS_URL)]  # fmt: skip
    try:
        polled, pending = [], []
        for turn in range(POLLS):
            turn_started = time.monotonic()
            if turn in (UNMOUNTED.start, UNMOUNTED.stop):
                mount.unlink()
                mount.symlink_to(tmp_path / "unmounted" if turn == UNMOUNTED.start else shared)
            host = hosts[turn % 2]
            host.send("poll")
            answer = host.answer()
            assert answer["status"] in ("ok", "degraded"), answer
            polled.append(answer["poll"])
            pending.append((snapshots.read_meta(redis, cluster.pk).history or {}).get("pending_polls", 0))
            time.sleep(max(0.0, 2.0 - (time.monotonic() - turn_started)))
        for host in hosts:  # two compactions at once
            host.send("compact")
        merged = [host.answer()["merged"] for host in hosts]
        polling = time.monotonic() - started
    finally:
        for host in hosts:
            host.stop()
    # b's polls while unmounted waited in its spool, and were written by its next poll
    assert pending == [0] * 5 + [1, 0, 2, 0, 3] + [0] * 6
    assert not list(hosts[1].spool.iterdir()) and sorted(polled) == sorted(int(p.name) for p in kept.iterdir())

    # every poll exactly once, counted per poll id in the files a reader and the job read
    store = HistoryStore(str(shared), state=MemoryOffsets())
    filesystem, base = open_location(str(shared))
    for name in ("group_stats", "queue_offsets", "topic_polls"):
        found = []
        for listed in list_partitions(filesystem, f"{base}/{name}/cluster={cluster.name}").values():
            chosen = cover(filesystem, list(listed.mtimes))
            found += [int(poll) for path in chosen.chosen for poll in chosen.polls[path]]
        assert sorted(found) == sorted(polled), name

    # the same polls, in the same order, written by one host alone (as another cluster: one
    # run of the job computes both)
    alone = f"{cluster.name}-alone"
    for folder in sorted(kept.iterdir(), key=lambda p: int(p.name)):
        tables = {p.stem: ipc.open_file(p).read_all() for p in folder.glob("*.arrow")}
        store.append(alone, tables, poll_id=int(folder.name))
    for name in ("group_stats", "queue_offsets", "topic_polls"):
        assert store.read(name, cluster.name).equals(store.read(name, alone)), name
    computing = time.monotonic()
    as_of = dt.datetime.now(dt.UTC)
    inputs = store.stats_inputs([cluster.name, alone], [as_of.date() - dt.timedelta(days=1), as_of.date()])
    assert inputs.deduplicated  # the job is handed files that hold no poll twice
    computed = statistics(spark, [cluster.name, alone], cluster.poll_interval, inputs, as_of, tmp_path / "stats")
    assert computed[cluster.name] == computed[alone] and computed[alone]["group_daily"]
    ours = [r for r in computed[cluster.name]["group_daily"] if r["group"] == f"G-hosts-{suffix}"]
    assert len(ours) == 1 and ours[0]["polls"] == POLLS and ours[0]["consumed"] > 0
    print(f"\n  {POLLS} polls by two hosts in {polling:.1f} s (files merged by the two compactions: {merged}); "
          f"statistics of both in {time.monotonic() - computing:.1f} s")  # fmt: skip
