"""Lag report files for 100 and 1,000 groups over 30 days (daily): time to CSV, XLSX and PDF
(with charts) on this machine, and peak memory of this process and of chromium.

    python -m bench.bench_reports [--days 30] [--sizes 100,1000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import tempfile
import time
from pathlib import Path

from bench.django_env import setup_django

GOALS = {"csv": 5, "xlsx": 30, "pdf": 60}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--sizes", default="100,1000")
    args = parser.parse_args()
    _, redis = setup_django()
    from django.utils import timezone

    from consumers.models import Cluster
    from consumers.reports.content import ReportSpec, build_content
    from consumers.reports.csvfile import write_csv
    from consumers.reports.pdf import write_pdf
    from consumers.reports.xlsx import write_xlsx
    from consumers.stats.models import ClusterDay, GroupDay

    last = timezone.now().date() - dt.timedelta(days=1)
    first = last - dt.timedelta(days=args.days - 1)
    out = Path(tempfile.mkdtemp(prefix="bench-reports-"))
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            name = f"bench-{size}"
            Cluster.objects.create(name=name, namesrv_addrs="127.0.0.1:9876")
            rows = []
            for g in range(size):
                for d in range(args.days):
                    rows.append(GroupDay(
                        cluster=name, date=first + dt.timedelta(days=d), group=f"group-{g:04d}", polls=5760,
                        expected_polls=5760, coverage=1.0, consumed=1000 + g * d, produced=1100 + g * d,
                        retries=g % 7, dlq_arrivals=g % 3, resets=0, incidents=d % 2, lag_p50=g % 50,
                        lag_p95=g % 90, lag_max=g % 120, lag_seconds_p50=d % 5, lag_seconds_p95=(g * d) % 97,
                        lag_seconds_max=(g * d) % 130, breach_minutes=(g + d) % 30, slo_seconds=60))  # fmt: skip
            GroupDay.objects.bulk_create(rows, batch_size=5000)
            ClusterDay.objects.bulk_create([ClusterDay(cluster=name, date=first + dt.timedelta(days=d), polls=5760,
                                                       expected_polls=5760, coverage=1.0, groups=size)
                                            for d in range(args.days)])  # fmt: skip
            spec = ReportSpec((name,), first, last)
            started = time.monotonic()
            content = build_content(spec)
            read = time.monotonic() - started
            timings = {}
            for fmt, write in (("csv", write_csv), ("xlsx", write_xlsx), ("pdf", None)):
                started = time.monotonic()
                path = out / f"{name}.{fmt}"
                if write is None:
                    write_pdf(content, path, title=f"Lag report {name}")
                else:
                    write(content, path)
                timings[fmt] = (time.monotonic() - started, path.stat().st_size)
            own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
            rows_made = len(content.detail)
            print(f"{size} groups x {args.days} days ({rows_made:,} rows); reading the statistics {read:.2f} s")
            for fmt, (seconds, size_bytes) in timings.items():
                total = read + seconds
                verdict = "ok" if total < GOALS[fmt] else "over"
                print(f"  {fmt.upper():4} {total:6.2f} s including the read (goal < {GOALS[fmt]} s: {verdict}), "
                      f"{size_bytes / 2**20:.1f} MiB")  # fmt: skip
            print(f"  peak memory: this process {own:.2f} GiB, largest child (chromium) {children:.2f} GiB")
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
