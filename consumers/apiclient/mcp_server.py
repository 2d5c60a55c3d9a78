"""`rocketmq-console mcp`: a Model Context Protocol server over the console's API, on stdio or
streamable HTTP (the official SDK, `mcp`).

Each tool is one API call with the token it was started with, so an assistant sees exactly what
the token's person may see and the audit log records each call as the MCP server's. Results are
the API's JSON. The write tools only propose: each creates a pending change request (a redrive
too, whatever its size) that a person approves in the console; no tool approves, runs, cancels or
undoes anything, and the API would refuse a read-only token's proposal anyway.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from . import calls
from .http import ApiError, Connection, ConsoleUnreachable

JAVA_LONG = 2**63 - 1  # offsets and shifts are Java longs on the broker
Cluster = Annotated[str, Field(min_length=1, max_length=64, description="the cluster's name in the console")]
Group = Annotated[str, Field(min_length=1, max_length=255, description="the consumer group")]
Topic = Annotated[str, Field(min_length=1, max_length=255, description="the topic")]
Broker = Annotated[str, Field(min_length=1, max_length=255, description="the broker's name (e.g. broker-a)")]
QueueId = Annotated[int, Field(ge=0, le=65535, description="the queue id on that broker")]
Offset = Annotated[int, Field(ge=0, le=JAVA_LONG, description="the message's offset in its queue")]
Reason = Annotated[
    str, Field(min_length=1, max_length=2000, description="why, for the person who approves: what you found")
]
Strategy = Annotated[
    Literal["time", "earliest", "latest", "exact", "shift", "copy"],
    Field(description="time: to timestamp_ms; earliest; latest; exact: offsets per queue; shift: by N; copy: "
                      "another group's offsets"),
]  # fmt: skip
Topics = Annotated[list[str] | None, Field(max_length=1000, description="only these topics (default: all)")]
IncludeRetry = Annotated[bool, Field(description="also the group's %RETRY% topic")]
TimestampMs = Annotated[int | None, Field(ge=0, description="strategy time: epoch milliseconds")]
Shift = Annotated[int | None, Field(ge=-JAVA_LONG, le=JAVA_LONG, description="strategy shift: messages, - back, + on")]
SourceGroup = Annotated[str, Field(max_length=255, description="strategy copy: the group to copy from")]
Offsets = Annotated[
    dict[str, int] | None,
    Field(description='strategy exact: {"topic@broker#queue": offset}'),
]

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
# a proposal writes a pending request and nothing else: not destructive, not idempotent (two calls
# make two requests)
PROPOSE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


class ConsoleMCP(MCPServer):
    """Refuses arguments a tool's schema does not name, before any call (the SDK would drop them
    silently: a misspelt `reason` must not become a proposal without one)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            unknown = sorted(set(arguments or {}) - set(tool.parameters.get("properties", {})))
            if unknown:
                valid = ", ".join(sorted(tool.parameters.get("properties", {}))) or "none"
                raise ToolError(f"unknown argument(s) {', '.join(unknown)} for {name}; valid: {valid}")
        return await super().call_tool(name, arguments, context)


def _answer(call, *args, **kwargs) -> dict:
    """The API's JSON, or a tool error carrying the API's own refusal (status and message)."""
    try:
        return call(*args, **kwargs)
    except ApiError as exc:
        raise ToolError(f"the console refused ({exc.status}): {exc.message}") from exc
    except ConsoleUnreachable as exc:
        raise ToolError(str(exc)) from exc


def _reset_params(strategy, topics, include_retry, timestamp_ms, shift, source_group, offsets) -> dict:
    params = {"strategy": strategy, "include_retry": include_retry, "topics": topics, "timestamp_ms": timestamp_ms,
              "shift": shift, "source_group": source_group or None, "offsets": offsets}  # fmt: skip
    return {k: v for k, v in params.items() if v is not None}


def build(api: Connection) -> MCPServer:
    server = ConsoleMCP(
        "rocketmq-console",
        instructions=(
            "An operations console for Apache RocketMQ consumer groups. Read tools return the console's API JSON "
            "(null means unknown, with the reason beside it). propose_* tools only create a pending change request "
            "that a person must approve in the console; say why in `reason`."
        ),
    )

    def tool(annotations):
        def register(fn):
            server.add_tool(fn, annotations=annotations, structured_output=True)
            return fn

        return register

    @tool(READ)
    def list_clusters() -> dict[str, Any]:
        """Every cluster the token sees, with its last poll (status, age, groups, brokers, proxies)."""
        return _answer(calls.clusters, api)

    @tool(READ)
    def list_groups(
        cluster: Annotated[str, Field(max_length=64, description="only this cluster")] = "",
        health: Annotated[str, Field(max_length=32, description="only this health state, e.g. STALLED")] = "",
        topic: Annotated[str, Field(max_length=255, description="only groups subscribed to this topic")] = "",
        q: Annotated[str, Field(max_length=255, description="group name contains")] = "",
        sort: Annotated[str, Field(max_length=32, description="e.g. -lag, drain")] = "",
        limit: Annotated[int, Field(ge=1, le=1000)] = 100,
        cursor: Annotated[str, Field(max_length=2000, description="next_cursor of the previous page")] = "",
    ) -> dict[str, Any]:
        """Consumer groups with lag, lag seconds, TPS, retry, DLQ size, health and drain forecast."""
        return _answer(calls.groups, api, cluster=cluster, health=health, topic=topic, q=q, sort=sort,
                       limit=limit, cursor=cursor)  # fmt: skip

    @tool(READ)
    def list_abandoned_groups(
        days: Annotated[int | None, Field(ge=1, le=3650, description="no client for at least this many days")] = None,
        cluster: Annotated[str, Field(max_length=64)] = "",
    ) -> dict[str, Any]:
        """Groups no client has used for days: last online, last consumed, lag, DLQ, alert rules, teams."""
        return _answer(calls.abandoned, api, days=days, cluster=cluster)

    @tool(READ)
    def get_group(cluster: Cluster, group: Group) -> dict[str, Any]:
        """One group: health with its evidence, queues with offsets and lag, clients, allocation, drain forecast."""
        return _answer(calls.group, api, cluster, group)

    @tool(READ)
    def get_allocation_timeline(
        cluster: Cluster, group: Group, hours: Annotated[int, Field(ge=1, le=168)] = 24
    ) -> dict[str, Any]:
        """Who held each of the group's queues when: every change of hands over the last hours (rebalances)."""
        return _answer(calls.allocation, api, cluster, group, hours=hours)

    @tool(READ)
    def get_group_clients(cluster: Cluster, group: Group) -> dict[str, Any]:
        """What each online client reports about itself now: version, subscriptions, queues held, rates."""
        return _answer(calls.group_clients, api, cluster, group)

    @tool(READ)
    def get_group_config(cluster: Cluster, group: Group) -> dict[str, Any]:
        """The group's subscription config per broker, and where it differs."""
        return _answer(calls.group_config, api, cluster, group)

    @tool(READ)
    def find_messages(
        cluster: Cluster,
        by: Annotated[Literal["id", "key", "offset", "time"], Field(description="how to find")],
        msg_id: Annotated[str, Field(max_length=64, description="by id: the message id")] = "",
        topic: Annotated[str, Field(max_length=255, description="by key, offset, time")] = "",
        key: Annotated[str, Field(max_length=255, description="by key")] = "",
        broker: Annotated[str, Field(max_length=255, description="by offset")] = "",
        queue_id: Annotated[int | None, Field(ge=0, le=65535, description="by offset")] = None,
        offset: Annotated[int | None, Field(ge=0, le=JAVA_LONG, description="by offset")] = None,
        since: Annotated[str, Field(max_length=32, description="by time: from, UTC, YYYY-MM-DD HH:MM")] = "",
        until: Annotated[str, Field(max_length=32, description="by time: to, UTC")] = "",
    ) -> dict[str, Any]:
        """Find messages by id, key, queue offset or store time (metadata; bodies for operators only)."""
        return _answer(calls.find_messages, api, cluster=cluster, by=by, msg_id=msg_id, topic=topic, key=key,
                       broker=broker, queue_id=queue_id, offset=offset, since=since, until=until)  # fmt: skip

    @tool(READ)
    def track_message(
        cluster: Cluster, topic: Topic, broker: Broker, queue_id: QueueId, offset: Offset
    ) -> dict[str, Any]:
        """Whether each group consumed a message, each verdict with its evidence, and the clients' trace."""
        return _answer(calls.track, api, cluster, topic, broker, queue_id, offset)

    @tool(READ)
    def dlq_summary(cluster: Cluster, group: Group) -> dict[str, Any]:
        """The group's dead-letter queue: how many, and the newest page of them (bodies for operators only)."""
        return _answer(calls.dlq_messages, api, cluster, group)

    @tool(READ)
    def list_alerts(
        state: Annotated[Literal["firing", "pending", "resolved", "cleared"], Field()] = "firing",
    ) -> dict[str, Any]:
        """Alerts in a state, with their evidence and deliveries."""
        return _answer(calls.alerts, api, state=state)

    @tool(READ)
    def preview_reset(
        cluster: Cluster, group: Group, strategy: Strategy, topics: Topics = None, include_retry: IncludeRetry = False,
        timestamp_ms: TimestampMs = None, shift: Shift = None, source_group: SourceGroup = "", offsets: Offsets = None,
    ) -> dict[str, Any]:  # fmt: skip
        """What an offset reset would do now, per queue (current, new offset, messages replayed or skipped),
        without requesting it."""
        params = _reset_params(strategy, topics, include_retry, timestamp_ms, shift, source_group, offsets)
        return _answer(calls.reset_preview, api, cluster, group, params)

    @tool(READ)
    def list_changes(
        state: Annotated[str, Field(max_length=32, description="e.g. PENDING, DONE")] = "",
        cluster: Annotated[str, Field(max_length=64)] = "",
        group: Annotated[str, Field(max_length=255)] = "",
    ) -> dict[str, Any]:
        """Change requests (resets, redrives, skips, config changes) and their states."""
        return _answer(calls.changes, api, state=state, cluster=cluster, group=group)

    @tool(READ)
    def get_change(change_id: Annotated[int, Field(ge=1, le=2**31 - 1)]) -> dict[str, Any]:
        """One change request: its plan, decisions, result and events."""
        return _answer(calls.change, api, change_id)

    @tool(PROPOSE)
    def propose_reset(
        cluster: Cluster, group: Group, strategy: Strategy, reason: Reason, topics: Topics = None,
        include_retry: IncludeRetry = False, timestamp_ms: TimestampMs = None, shift: Shift = None,
        source_group: SourceGroup = "", offsets: Offsets = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Propose an offset reset: a pending change request with the plan, for a person to approve."""
        params = _reset_params(strategy, topics, include_retry, timestamp_ms, shift, source_group, offsets)
        return _answer(calls.propose, api, "reset", cluster, group, params, reason)

    @tool(PROPOSE)
    def propose_skip(
        cluster: Cluster, group: Group, topic: Topic, broker: Broker, queue_id: QueueId,
        offset: Annotated[int, Field(ge=0, le=JAVA_LONG, description="the offset the group is pinned at")],
        reason: Reason, count: Annotated[int, Field(ge=1, le=10)] = 1,
        copy_to_dlq: Annotated[bool, Field(description="keep a copy in the group's DLQ")] = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Propose skipping the message(s) a group is stuck on, for a person to approve."""
        params = {"topic": topic, "broker": broker, "queue_id": queue_id, "offset": offset, "count": count,
                  "copy_to_dlq": copy_to_dlq}  # fmt: skip
        return _answer(calls.propose, api, "skip", cluster, group, params, reason)

    @tool(PROPOSE)
    def propose_config_change(
        cluster: Cluster, group: Group, reason: Reason,
        consume_enable: Annotated[bool | None, Field(description="false pauses the group")] = None,
        retry_max_times: Annotated[int | None, Field(ge=-1, le=64)] = None,
        consume_message_orderly: bool | None = None, consume_broadcast_enable: bool | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Propose a change of the group's subscription config on every broker, for a person to approve."""
        wanted = {
            "consumeEnable": consume_enable,
            "retryMaxTimes": retry_max_times,
            "consumeMessageOrderly": consume_message_orderly,
            "consumeBroadcastEnable": consume_broadcast_enable,
        }
        changes = {k: v for k, v in wanted.items() if v is not None}  # fmt: skip
        if not changes:
            raise ToolError("nothing to change: give at least one setting")
        return _answer(calls.propose, api, "config", cluster, group, {"set": changes}, reason)

    @tool(PROPOSE)
    def propose_redrive(
        cluster: Cluster, group: Group, reason: Reason,
        target: Annotated[Literal["group", "original", "topic"], Field(description="where the dead letters go")],
        target_topic: Annotated[str, Field(max_length=255, description="target topic: its name")] = "",
        rate: Annotated[int | None, Field(ge=1, description="messages per second")] = None,
        key: Annotated[str, Field(max_length=255)] = "", tag: Annotated[str, Field(max_length=255)] = "",
        original_topic: Annotated[str, Field(max_length=255)] = "",
        ids: Annotated[list[str] | None, Field(max_length=10_000, description="only these message ids")] = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Propose sending a group's dead letters back, for a person to approve (whatever the count)."""
        chosen = {"key": key, "tag": tag, "original_topic": original_topic, "ids": ids}
        selection = {k: v for k, v in chosen.items() if v}
        body = {"target": target, "target_topic": target_topic, "reason": reason, "selection": selection,
                "ask_approver": True, **({"rate": rate} if rate else {})}  # fmt: skip
        return _answer(calls.propose_redrive, api, cluster, group, body)

    for registered in server._tool_manager.list_tools():
        registered.parameters["additionalProperties"] = False  # what ConsoleMCP.call_tool enforces
    return server


def serve(api: Connection, *, transport: str, host: str = "127.0.0.1", port: int = 8765) -> None:
    server = build(api)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
