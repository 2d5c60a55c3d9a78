"""Find and track on a cluster of their own: a find by key over a day's index (many keyed
messages stored), and the track of one message over every group of its topic (100 by default,
each with committed offsets and a retry topic), each beside mqadmin's time for the same
question: queryMsgByKey, and queryMsgById (which prints its own message track of every group),
both in mqadmin's long-lived JVM (no JVM start counted) and as the mqadmin script runs (a
fresh JVM).

    python -m bench.bench_track [--groups 100] [--messages 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from django.conf import settings

from bench.common import TOPIC, prepare_groups, start_cluster
from consumers.messages import lookup
from consumers.messages.track import track
from consumers.rocketmq import AdminClient
from consumers.rocketmq.models import Outgoing
from devstack.mqadmin import MQAdmin, parse_key_query, parse_message_tracks
from devstack.runtime import ensure_runtime


async def _fill_index(namesrv: str, messages: int) -> str:
    """`messages` keyed messages on the topic; returns one key (held by exactly one of them)."""
    async with AdminClient(namesrv, request_timeout=30) as client:
        for start in range(0, messages, 5000):
            batch = [Outgoing(TOPIC, f"m{i}".encode(), {"KEYS": f"order-{i} customer-{i % 97}"})
                     for i in range(start, min(messages, start + 5000))]  # fmt: skip
            results = await client.actions.send_messages(batch)
            failed = [r for r in results if isinstance(r, Exception)]
            assert not failed, failed[:3]
    return f"order-{messages // 2}"


async def _measure(namesrv: str, key: str, begin: int, end: int, runs: int) -> dict:
    async with AdminClient(namesrv) as client:
        finds, tracks = [], []
        for _ in range(runs):
            started = time.monotonic()
            found = await lookup.find_by_key(client, TOPIC, key, begin, end)
            finds.append(time.monotonic() - started)
        (located,) = found.messages
        for _ in range(runs):
            started = time.monotonic()
            tracking = await track(client, located)
            tracks.append(time.monotonic() - started)
        return {"finds": finds, "tracks": tracks, "found": found, "tracking": tracking}


def main() -> None:
    # the verdicts and notes are marked for translation: English, with no project set up
    if not settings.configured:
        settings.configure(USE_I18N=False)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cluster = start_cluster()
    mqadmin = MQAdmin(ensure_runtime(), cluster.namesrv_addr, Path(tempfile.mkdtemp(prefix="bench-mqadmin-")))
    try:
        groups = prepare_groups(cluster, args.groups)
        started = time.monotonic()
        key = asyncio.run(_fill_index(cluster.namesrv_addr, args.messages))
        print(f"set-up: {args.messages} keyed messages in {time.monotonic() - started:.1f} s")
        end = int(time.time() * 1000)
        begin = end - 86_400_000
        ours = asyncio.run(_measure(cluster.namesrv_addr, key, begin, end, args.runs))
        (located,) = ours["found"].messages
        m = located.message
        commands = {
            "queryMsgByKey": ("queryMsgByKey", "-t", TOPIC, "-k", key, "-b", str(begin), "-e", str(end)),
            "queryMsgById": ("queryMsgById", "-t", TOPIC, "-i", m.offset_msg_id),
        }
        warm = {name: [mqadmin.run(*argv) for _ in range(args.runs)] for name, argv in commands.items()}
        assert parse_key_query(warm["queryMsgByKey"][0].out) == [(m.msg_id, m.queue_id, m.queue_offset)]
        tracked = parse_message_tracks(warm["queryMsgById"][0].out)
        verdicts = {g.group: g.verdict for g in ours["tracking"].groups}
        assert set(groups) <= set(verdicts) and set(groups) <= set(tracked), (len(verdicts), len(tracked))
        fresh = {}
        for name, argv in commands.items():
            started = time.monotonic()
            mqadmin.run_fresh(*argv)
            fresh[name] = time.monotonic() - started
    finally:
        mqadmin.close()
        cluster.stop()
    report(f"find by key over a day's index ({args.messages} keyed messages)", ours["finds"],
           warm["queryMsgByKey"], fresh["queryMsgByKey"], "queryMsgByKey", args.runs)  # fmt: skip
    report(f"track of one message over {len(verdicts)} groups", ours["tracks"], warm["queryMsgById"],
           fresh["queryMsgById"], "queryMsgById, which prints its own track", args.runs)  # fmt: skip


def report(what: str, ours: list[float], warm: list, fresh: float, command: str, runs: int) -> None:
    print(f"\n{what}, {runs} runs (s):")
    print(f"  ours: median {statistics.median(ours):.3f}, worst {max(ours):.3f}")
    print(f"  mqadmin {command}: median {statistics.median(r.millis for r in warm) / 1000:.3f} in its running JVM, "
          f"{fresh:.3f} as the script runs it (a JVM started)")  # fmt: skip


if __name__ == "__main__":
    main()
