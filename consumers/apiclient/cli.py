"""`rocketmq-console api ...`: the API from a terminal or a script, the same calls as the MCP
server's. Tables for people; `--json` prints the API's JSON unchanged, for scripts.

The URL and token come from --url / --token-file or ROCKETMQ_CONSOLE_URL and
ROCKETMQ_CONSOLE_TOKEN (or ROCKETMQ_CONSOLE_TOKEN_FILE). `propose` creates a pending change
request; nothing here approves or runs one.
"""

from __future__ import annotations

import json
import sys

from . import calls
from .http import ApiError, Connection, ConsoleUnreachable, NotConfigured

UNKNOWN = "?"  # a null of the API: not read, never zero
STRATEGIES = ["time", "earliest", "latest", "exact", "shift", "copy"]


def add_parser(subparsers, *, client: str) -> None:
    api = subparsers.add_parser("api", help="call the console's API (groups, group, track, preview, propose, status)")
    api.set_defaults(handler=lambda args: run(args, client=client))
    api.add_argument("--url", default="", help="the console's URL (default: $ROCKETMQ_CONSOLE_URL)")
    api.add_argument("--token-file", default="", help="a file holding the API token (default: the environment)")
    api.add_argument("--json", action="store_true", help="print the API's JSON, not a table")
    calls_of = api.add_subparsers(dest="call", required=True, metavar="CALL")

    calls_of.add_parser("clusters", help="the clusters and their last poll")
    groups = calls_of.add_parser("groups", help="consumer groups with lag and health")
    for name in ("cluster", "health", "topic", "q", "sort", "cursor"):
        groups.add_argument(f"--{name}", default="")
    groups.add_argument("--limit", type=int, default=None)

    group = calls_of.add_parser("group", help="one group: health, queues, lag")
    _cluster_group(group)

    track = calls_of.add_parser("track", help="which groups consumed a message")
    track.add_argument("cluster")
    track.add_argument("topic")
    track.add_argument("broker")
    track.add_argument("queue_id", type=int)
    track.add_argument("offset", type=int)

    for name, what in (("preview", "what a reset would do now"), ("propose", "request a reset, for an approver")):
        reset = calls_of.add_parser(name, help=what)
        _cluster_group(reset)
        reset.add_argument("--strategy", required=True, choices=STRATEGIES)
        reset.add_argument("--topic", nargs="+", dest="topics", help="only these topics")
        reset.add_argument("--include-retry", action="store_true")
        reset.add_argument("--timestamp-ms", type=int)
        reset.add_argument("--shift", type=int)
        reset.add_argument("--source-group", default="")
        reset.add_argument("--offset", nargs="+", default=[], metavar="TOPIC@BROKER#QUEUE=N")
        if name == "propose":
            reset.add_argument("--reason", required=True, help="why, for the approver")

    status = calls_of.add_parser("status", help="a change request's state")
    status.add_argument("change_id", type=int)


def _cluster_group(parser) -> None:
    parser.add_argument("cluster")
    parser.add_argument("group")


def run(args, *, client: str, out=None) -> int:
    out = out or sys.stdout
    try:
        api = Connection.configured(client, url=args.url, token_file=args.token_file)
        data = _call(api, args)
    except NotConfigured as exc:
        print(f"rocketmq-console api: {exc}", file=sys.stderr)
        return 2
    except ApiError as exc:
        if args.json:
            print(json.dumps(exc.body, indent=2, sort_keys=True), file=out)
        print(f"rocketmq-console api: the console refused ({exc.status}): {exc.message}", file=sys.stderr)
        return 1
    except (ConsoleUnreachable, ValueError) as exc:
        print(f"rocketmq-console api: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else TABLES[args.call](data), file=out)
    return 0


def _call(api: Connection, args) -> dict:
    match args.call:
        case "clusters":
            return calls.clusters(api)
        case "groups":
            names = ("cluster", "health", "topic", "q", "sort", "cursor", "limit")
            return calls.groups(api, **{n: getattr(args, n) for n in names})
        case "group":
            return calls.group(api, args.cluster, args.group)
        case "track":
            return calls.track(api, args.cluster, args.topic, args.broker, args.queue_id, args.offset)
        case "preview":
            return calls.reset_preview(api, args.cluster, args.group, _reset_params(args))
        case "propose":
            return calls.propose(api, "reset", args.cluster, args.group, _reset_params(args), args.reason)
        case "status":
            return calls.change(api, args.change_id)
    raise ValueError(f"unknown call {args.call}")


def _reset_params(args) -> dict:
    params = {"strategy": args.strategy, "include_retry": args.include_retry, "topics": args.topics,
              "timestamp_ms": args.timestamp_ms, "shift": args.shift,
              "source_group": args.source_group or None}  # fmt: skip
    if args.offset:
        offsets = {}
        for given in args.offset:
            key, sep, value = given.rpartition("=")
            if not sep or not value.strip().isdigit():
                raise ValueError(f"--offset {given!r}: expected TOPIC@BROKER#QUEUE=N")
            offsets[key] = int(value)
        params["offsets"] = offsets
    return {k: v for k, v in params.items() if v not in (None, [])}


def table(headers: list[str], rows: list[list]) -> str:
    """Plain columns, numbers right-aligned; a null shows as ?."""
    cells = [[UNKNOWN if v is None else str(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], int | float) or row[i] is None for row in rows) for i in range(len(headers))]

    def line(values):
        shown = (v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True))
        return "  ".join(shown).rstrip()

    return "\n".join([line(headers), *(line(r) for r in cells)])


def _health(row: dict) -> str | None:
    health = row.get("health")
    return health.get("state") if isinstance(health, dict) else health


def _clusters(data: dict) -> str:
    rows = [[c["name"], c["state"], c["groups"], c["polled_age_seconds"]] for c in data["clusters"]]
    return table(["cluster", "state", "groups", "polled s ago"], rows)


def _groups(data: dict) -> str:
    rows = [[g["cluster"], g["group"], _health(g), g.get("lag"), g.get("lag_seconds"), g.get("clients")]
            for g in data["groups"]]  # fmt: skip
    shown = table(["cluster", "group", "health", "lag", "lag s", "clients"], rows)
    more = f"\nmore: --cursor {data['next_cursor']}" if data.get("next_cursor") else ""
    return f"{shown}\n{data['total']} group(s){more}"


def _group(data: dict) -> str:
    head = f"{data['cluster']}/{data['group']}: {_health(data)}, lag {_or_unknown(data.get('lag'))}, " \
           f"clients {_or_unknown(data.get('clients'))}"  # fmt: skip
    rows = [[q["topic"], q["broker"], q["queue_id"], q["max"], q["consumer"], q["lag"]] for q in data.get("queues", [])]
    return head + "\n" + table(["topic", "broker", "queue", "end", "committed", "lag"], rows)


def _track(data: dict) -> str:
    rows = [[g["group"], g["verdict"], g["why"]] for g in data["groups"]]
    return table(["group", "verdict", "why"], rows)


def _preview(data: dict) -> str:
    plan = data.get("plan", data)
    rows = [[r["label"], r["current"], r["target"], r["delta"], r.get("note") or ""] for r in plan["rows"]]
    return table(["queue", "committed", "new", "moves", "note"], rows)


def _change(data: dict) -> str:
    fields = ["id", "kind", "state", "cluster", "group", "requested_by", "decided_by", "reason"]
    return table(["field", "value"], [[f, data.get(f)] for f in fields])


def _or_unknown(value) -> str:
    return UNKNOWN if value is None else str(value)


TABLES = {"clusters": _clusters, "groups": _groups, "group": _group, "track": _track, "preview": _preview,
          "propose": _change, "status": _change}  # fmt: skip
