"""Page latency through the production server (`rocketmq-console serve`: gunicorn, gthread,
DEBUG off), measured from a second process: the groups list over 1,000 groups and the page of a
group with 64 queues, p50 and p95 of the server's own time (Server-Timing) and of the full round
trip on a kept-alive connection, and the gap between the two at p50 (what the connection adds:
a delayed-ACK stall shows as a constant ~40 ms). Several sizes (`--groups 1000,3000,10000`) are
measured one after the other on the same server, and their p95s printed side by side. Then
`--clients` concurrent clients (50) for `--seconds` (60) on the largest size: throughput, p95
and errors.

    python -m bench.bench_pages [--groups 1000] [--requests 200] [--clients 50] [--seconds 60]
"""

from __future__ import annotations

import argparse
import http.client
import re
import subprocess
import sys
import threading
import time

from bench.common import describe, percentile
from bench.django_env import setup_django
from devstack.processes import free_port


def measure(
    port: int, path: str, cookie: str, count: int, headers: dict | None = None, before=None
) -> tuple[list, list]:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    server, total = [], []
    for i in range(count):
        if before is not None:
            before(i)
        started = time.perf_counter()
        connection.request("GET", path, headers={"Cookie": cookie, **(headers or {})})
        response = connection.getresponse()
        response.read()
        total.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, (path, response.status)
        server.append(float(re.search(r"dur=([\d.]+)", response.getheader("Server-Timing")).group(1)))
    return server, total


def _measure_pages(port: int, cookie: str, requests: int, cluster, connection) -> dict:
    from consumers.live import snapshots

    pages = {
        "groups list, sorted by lag": ("/groups/", None),
        "groups list, htmx refresh of the table": ("/groups/", {"HX-Request": "true"}),
        "group page (64 queues)": ("/groups/bench/wide/", None),
        "group page, htmx refresh": ("/groups/bench/wide/", {"HX-Request": "true"}),
        "overview (home)": ("/", None),
        # no group has dead letters here: the cost of finding them among all (bench_dlq_overview
        # measures reading them)
        "DLQ overview": ("/dlq/", None),
    }
    results = {}
    for label, (path, headers) in pages.items():
        measure(port, path, cookie, 10, headers)  # warm up
        results[label] = measure(port, path, cookie, requests, headers)
    # a new poll replaces the index the server has decoded: the next request decodes it again
    # (simulated by the same JSON with trailing blanks and a new version, new bytes; a poll of
    # 10,000 groups takes seconds to publish)
    index_key, version_key = snapshots.key(cluster.pk, "index"), snapshots.key(cluster.pk, "index-version")
    raw = connection.get(index_key)

    def new_poll(i: int, wait: float = 0.0) -> None:
        pipe = connection.pipeline(transaction=True)
        pipe.set(index_key, raw + b" " * (1 + i % 2))
        pipe.set(version_key, f"bench-{i}-{time.monotonic()}")
        pipe.execute()
        time.sleep(wait)

    # at once: before the server's warming thread (GROUPS_LIST_WARM_SECONDS) has seen the poll
    label = "groups list, htmx refresh, first after a poll"
    results[label] = measure(port, "/groups/", cookie, 30, {"HX-Request": "true"}, before=new_poll)
    # a second later, as a viewer's refresh (every 5 s) mostly comes: the warming thread has made
    # the poll's rows and orders
    label = "groups list, htmx refresh, first 1 s after a poll"
    results[label] = measure(port, "/groups/", cookie, 30, {"HX-Request": "true"}, before=lambda i: new_poll(i, 1.0))
    return results


CONCURRENT_PAGES = [
    ("/groups/", {"HX-Request": "true"}),
    ("/groups/bench/wide/", {"HX-Request": "true"}),
    ("/groups/bench/g-0001/", None),
    ("/", None),
]


def concurrent_clients(port: int, cookie: str, clients: int, seconds: float) -> dict:
    """`clients` threads, each on its own kept-alive connection, cycling through what an open
    tab asks for, for `seconds`: requests done, errors (any status but 200, any exception) and
    round trips."""
    stop_at = time.monotonic() + seconds
    lock = threading.Lock()
    totals: list[float] = []
    errors: list[str] = []

    def client(n: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine, i = [], n
        while time.monotonic() < stop_at:
            path, headers = CONCURRENT_PAGES[i % len(CONCURRENT_PAGES)]
            i += 1
            started = time.perf_counter()
            try:
                connection.request("GET", path, headers={"Cookie": cookie, **(headers or {})})
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    with lock:
                        errors.append(f"{path}: {response.status}")
            except (OSError, http.client.HTTPException) as exc:
                with lock:
                    errors.append(f"{path}: {exc!r}")
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                continue
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            totals.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"requests": len(totals), "errors": errors, "seconds": time.monotonic() - started, "totals": totals}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1000", help="sizes, comma-separated, e.g. 1000,3000,10000")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients at the end (0: none)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the concurrent clients run")
    parser.add_argument("--workers", type=int, default=2, help="the server's processes (threads: 8 each)")
    args = parser.parse_args()
    base, redis = setup_django()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from consumers.identity import create_or_update_user
    from consumers.jobs.redis_client import get_redis
    from consumers.models import Cluster
    from devstack.synthetic import group, publish

    user = create_or_update_user("bench", "viewer", "bench-password-123")
    cluster = Cluster.objects.create(name="bench", namesrv_addrs="127.0.0.1:9876")
    sizes = sorted(int(n) for n in args.groups.split(","))

    def publish_groups(count: int) -> None:
        groups = [
            group(f"g-{i:04d}", lag=i % 97, queues=8, online=i % 5 != 0, topic=f"topic-{i % 40}") for i in range(count)
        ]
        groups.append(group("wide", lag=640, queues=64))
        publish(cluster, get_redis(), groups)

    session = SessionStore()
    session.update(
        {
            SESSION_KEY: str(user.pk),
            BACKEND_SESSION_KEY: settings.AUTHENTICATION_BACKENDS[-1],  # [0] is django-axes's, no users
            HASH_SESSION_KEY: user.get_session_auth_hash(),
        }
    )
    session.create()
    cookie = f"{settings.SESSION_COOKIE_NAME}={session.session_key}"

    port = free_port()
    # the production server as the systemd unit runs it (dashboard/cli.py), DEBUG off (setup_django)
    serve = ["serve", "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers), "--threads", "8"]
    server = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli", *serve, "--no-collectstatic", "--access-logfile", ""],
        cwd=settings.BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/login/")
                break
            except OSError:
                time.sleep(0.1)
        by_size = {}
        for count in sizes:
            publish_groups(count)
            by_size[count] = _measure_pages(port, cookie, args.requests, cluster, get_redis())
        crowd = concurrent_clients(port, cookie, args.clients, args.seconds) if args.clients else None
    finally:
        server.terminate()
        server.wait(10)
        redis.stop()
    for count, results in by_size.items():
        print(f"\nPage latency from a second process, {count + 1} groups, {args.requests} requests each (ms)")
        for label, (server_times, totals) in results.items():
            print(f"  {label}")
            print(f"    server time  {describe(server_times)}")
            print(f"    round trip   {describe(totals)}")
            gap = percentile(totals, 50) - percentile(server_times, 50)
            print(f"    round trip - server time at p50: {gap:.2f} ms (target <= 5)")
    print("\nServer time p95 (ms) by number of groups:")
    print(f"  {'':<48}" + "".join(f"{count + 1:>10,}" for count in by_size))
    for label in next(iter(by_size.values())):
        print(f"  {label:<48}" + "".join(f"{percentile(r[label][0], 95):>10.1f}" for r in by_size.values()))
    print("targets: lists and overviews p95 <= 150 ms, the group page p95 <= 50 ms")
    if crowd is not None:
        largest = sizes[-1] + 1
        print(f"\n{args.clients} concurrent clients for {crowd['seconds']:.0f} s, {largest:,} groups, "
              f"{args.workers} gunicorn workers x 8 threads:")  # fmt: skip
        print(f"  {crowd['requests']} requests, {crowd['requests'] / crowd['seconds']:.1f}/s, "
              f"round trip {describe(crowd['totals'])} ms, errors: {len(crowd['errors'])}")  # fmt: skip
        for error in crowd["errors"][:10]:
            print(f"    {error}")


if __name__ == "__main__":
    main()
