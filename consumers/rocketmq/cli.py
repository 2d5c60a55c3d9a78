"""Command line for operators and debugging: `python -m consumers.rocketmq progress -n NS -g GROUP`.

`progress` prints a group the way `mqadmin consumerProgress -g` does (same columns, same
totals), plus the client holding each queue; `cluster` lists brokers; `groups` prints one
line per group of a cluster snapshot.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import sys

from .client import AdminClient
from .codes import ResponseCode
from .errors import RocketMQError
from .positions import GroupProgress
from .snapshot import cluster_snapshot, group_progress


def format_progress(progress: GroupProgress, *, tz: dt.tzinfo = dt.UTC) -> str:
    lines = [
        f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  {'#Consumer Offset':<20}  "
        f"{'#Client':<32}  {'#Diff':<20} {'#Inflight':<20}#LastTime"
    ]
    inflight_total = 0
    for q in progress.queues:
        inflight = (q.pull_offset - q.consumer_offset) if q.pull_offset is not None else 0
        inflight_total += inflight
        last = (
            dt.datetime.fromtimestamp(q.last_consume_time / 1000, tz).strftime("%Y-%m-%d %H:%M:%S")
            if (q.last_consume_time)
            else "N/A"
        )
        lines.append(
            f"{q.topic[:64]:<64}  {q.broker_name[:32]:<32}  {q.queue_id:<4}  {q.broker_offset:<20}  "
            f"{q.consumer_offset:<20}  {','.join(q.clients) or '-':<32}  {q.lag:<20} {inflight:<20}{last}"
        )
    lines.append("")
    tps = progress.consume_tps
    lines.append(f"Consume TPS: {tps:.2f}" if tps is not None else "Consume TPS: unknown")
    lines.append(f"Consume Diff Total: {progress.diff_total}")
    lines.append(f"Consume Inflight Total: {inflight_total}")
    for problem in progress.problems:
        lines.append(f"UNKNOWN {problem.scope} {problem.target}: {problem.error}")
    return "\n".join(lines)


def _jsonable(value):
    if dataclasses.is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def _empty_progress(progress: GroupProgress) -> str | None:
    """Why a group without any committed offset has no progress to print, as mqadmin says it
    (it fails rather than print an empty table with a total of 0)."""
    if progress.queues or any(p.scope == "group" for p in progress.problems):
        return None
    connection = progress.connection
    if connection is not None and connection.message_model == "BROADCASTING":
        return (
            f"CODE: {ResponseCode.BROADCAST_CONSUMPTION} no consume stats for {progress.group}: "
            "the consumer is under the broadcast mode (its offsets live on the clients)"
        )
    if not progress.online:
        return (
            f"CODE: {ResponseCode.CONSUMER_NOT_ONLINE} no consume stats for {progress.group}: "
            "the offset table is empty, maybe the consumer is not online"
        )
    return None


async def _run(args: argparse.Namespace) -> int:
    async with AdminClient(args.namesrv, request_timeout=args.timeout) as client:
        if args.command == "progress":
            progress = await group_progress(client, args.group)
            refusal = _empty_progress(progress)
            if refusal:
                print(f"error: {refusal}", file=sys.stderr)
                return 2
            print(json.dumps(_jsonable(progress), indent=2) if args.json else format_progress(progress))
        elif args.command == "cluster":
            info = await client.topology.cluster_info()
            for cluster, names in sorted(info.clusters.items()):
                for name in names:
                    for broker_id, address in sorted(info.brokers[name].addrs.items()):
                        runtime = await client.topology.broker_runtime_info(address)
                        print(f"{cluster:<24}{name:<24}{broker_id:<6}{address:<24}{runtime.version}")
        elif args.command == "groups":
            snapshot = await cluster_snapshot(client, running_info=False)
            for name, group in snapshot.groups.items():
                state = "online" if group.online else "offline" if group.online is False else "unknown"
                print(f"{name:<48}{state:<9}{group.diff_total:>12}{'' if group.complete else '  (incomplete)'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m consumers.rocketmq", description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--namesrv", required=True, help="name server address(es), host:port;host:port")
    parser.add_argument("--timeout", type=float, default=5.0, help="per-request timeout in seconds")
    commands = parser.add_subparsers(dest="command", required=True)
    progress = commands.add_parser("progress", help="one group's per-queue progress, like mqadmin consumerProgress")
    progress.add_argument("-g", "--group", required=True)
    progress.add_argument("--json", action="store_true", help="print the typed result as JSON")
    commands.add_parser("cluster", help="brokers of the cluster with their versions")
    commands.add_parser("groups", help="every group with its diff total")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except RocketMQError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
