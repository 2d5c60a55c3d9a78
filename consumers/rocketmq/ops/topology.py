"""Topology: cluster info, topics, routes, configs, broker runtime info and stats."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from ..codes import RequestCode, ResponseCode
from ..errors import BrokerError, RocketMQError, TopicNotFound, TransportError
from ..models import (
    BrokerRuntimeInfo,
    BrokerStatsData,
    ClusterInfo,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRoute,
)
from ..remoting import ClientConfig, RemotingClient
from .base import Operations, parse_body, typed_answer

CLUSTER_INFO_TTL = 10.0


class Topology(Operations):
    def __init__(self, remoting: RemotingClient, config: ClientConfig):
        super().__init__(remoting)
        self.config = config
        # topic -> (fetched at, route), or (fetched at, the name server's "not found" error)
        self._routes: dict[str, tuple[float, TopicRoute | TopicNotFound]] = {}
        self._cluster: tuple[float, ClusterInfo] | None = None
        self._fetching: dict[str, asyncio.Task] = {}

    async def _shared(self, key: str, fetch: Callable[[], Awaitable]):
        """One name-server request for every caller that asks for the same thing while it is in
        flight: a thousand sends started at once on a cold cache would each ask for the route."""
        task = self._fetching.get(key)
        if task is None:
            task = asyncio.ensure_future(fetch())
            self._fetching[key] = task
            task.add_done_callback(lambda t: (self._fetching.pop(key, None), t.cancelled() or t.exception()))
        return await asyncio.shield(task)

    async def cluster_info(self, *, max_age: float = 0.0) -> ClusterInfo:
        """Brokers and clusters from the name server; `max_age` allows a cached answer (and an
        answer already on its way)."""
        now = time.monotonic()
        if self._cluster and max_age > 0 and now - self._cluster[0] < max_age:
            return self._cluster[1]
        if max_age > 0:
            return await self._shared("cluster", self._fetch_cluster_info)
        return await self._fetch_cluster_info()

    async def _fetch_cluster_info(self) -> ClusterInfo:
        now = time.monotonic()
        response = await self.remoting.call_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        info = parse_body(response, ClusterInfo.from_wire, what="cluster info")
        self._cluster = (now, info)
        return info

    async def topic_list(self) -> list[str]:
        response = await self.remoting.call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return parse_body(response, lambda d: sorted(str(t) for t in d.get("topicList") or []), what="topic list")

    async def topic_route(self, topic: str, *, max_age: float | None = None) -> TopicRoute:
        """Route of a topic. Cached for the client's route TTL (a missing topic too, so a
        group that never consumed does not cost a name-server call per poll)."""
        ttl = self.config.route_ttl if max_age is None else max_age
        now = time.monotonic()
        cached = self._routes.get(topic)
        if cached and now - cached[0] < ttl:
            if isinstance(cached[1], TopicNotFound):
                missing = cached[1]
                raise TopicNotFound(missing.code, missing.remark, address=missing.address, request="cached route")
            return cached[1]
        if ttl > 0:
            return await self._shared(f"route/{topic}", lambda: self._fetch_route(topic))
        return await self._fetch_route(topic)

    async def _fetch_route(self, topic: str) -> TopicRoute:
        now = time.monotonic()
        try:
            response = await self.remoting.call_namesrv(
                RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, "acceptStandardJsonOnly": "true"}
            )
        except TopicNotFound as exc:
            self._routes[topic] = (now, exc)
            raise
        route = parse_body(response, lambda d: TopicRoute.from_wire(topic, d), what="topic route")
        self._routes[topic] = (now, route)
        return route

    async def topic_routes(self, topics: list[str]) -> dict[str, TopicRoute | RocketMQError]:
        """Routes of many topics: cached ones from the cache, the others in one pipelined
        batch to the name servers (the next one for those a name server failed to answer)."""
        ttl = self.config.route_ttl
        now = time.monotonic()
        result: dict[str, TopicRoute | RocketMQError] = {}
        missing = []
        for topic in dict.fromkeys(topics):
            cached = self._routes.get(topic)
            if cached and now - cached[0] < ttl:
                value = cached[1]
                result[topic] = (
                    TopicNotFound(value.code, value.remark, address=value.address, request="cached route")
                    if isinstance(value, TopicNotFound)
                    else value
                )
            else:
                missing.append(topic)
        code = RequestCode.GET_ROUTEINFO_BY_TOPIC
        for namesrv in self.config.namesrv_addrs:
            if not missing:
                break
            answers = await self.remoting.invoke_many(
                [(namesrv, code, {"topic": t, "acceptStandardJsonOnly": "true"}) for t in missing]
            )
            retry = []
            for topic, answer in zip(missing, answers, strict=True):
                route = typed_answer(
                    answer, namesrv, lambda d, t=topic: TopicRoute.from_wire(t, d), what="topic route", code=code
                )
                if isinstance(route, TransportError):
                    retry.append(topic)
                result[topic] = route
                if isinstance(route, (TopicRoute, TopicNotFound)):
                    self._routes[topic] = (now, route)
            missing = retry
        return result

    def forget_route(self, topic: str | None = None) -> None:
        if topic is None:
            self._routes.clear()
        else:
            self._routes.pop(topic, None)

    async def master_addr(self, broker_name: str) -> str:
        info = await self.cluster_info(max_age=CLUSTER_INFO_TTL)
        address = info.masters().get(broker_name)
        if address is None:
            info = await self.cluster_info()
            address = info.masters().get(broker_name)
        if address is None:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, f"no live master for broker {broker_name}")
        return address

    async def topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        response = await self.remoting.call(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)

        def build(data: dict) -> dict[str, TopicConfig]:
            table = data.get("topicConfigTable") or {}
            return {str(name): TopicConfig.from_wire(cfg) for name, cfg in table.items()}

        return parse_body(response, build, what="topic config", address=broker_addr)

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        response = await self.remoting.call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)

        def build(data: dict) -> dict[str, SubscriptionGroupConfig]:
            table = data.get("subscriptionGroupTable") or {}
            return {str(name): SubscriptionGroupConfig.from_wire(cfg) for name, cfg in table.items()}

        return parse_body(response, build, what="subscription groups", address=broker_addr)

    async def consumes_orderly(self, group: str, broker_addrs) -> bool | None:
        """Whether the group's subscription config says consumeMessageOrderly (FIFO for POP
        consumers), from the first of `broker_addrs` that answers; None: none answered."""
        for address in broker_addrs:
            try:
                config = (await self.subscription_groups(address)).get(group)
            except RocketMQError:
                continue
            return bool(config and config.consume_message_orderly)
        return None

    async def pop_modes(self, broker_addr: str) -> dict[str, set[str]]:
        """Group -> the topics it consumes with POP on this broker (set with mqadmin
        setConsumeMode: remoting clients then pop instead of holding queues)."""
        found: dict[str, set[str]] = {}
        for group, topics in (await self.request_modes(broker_addr)).items():
            pops = {t for t, mode in topics.items() if mode["mode"] == "POP"}
            if pops:
                found[group] = pops
        return found

    async def request_modes(self, broker_addr: str) -> dict[str, dict[str, dict]]:
        """Group -> topic -> {"mode": "POP" or "PULL", "popShareQueueNum": n}: the modes set
        explicitly on this broker (GET_ALL_MESSAGE_REQUEST_MODE); a pair not named is PULL, the
        broker's default."""
        response = await self.remoting.call(broker_addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)

        def build(data: dict) -> dict[str, dict[str, dict]]:
            found: dict[str, dict[str, dict]] = {}
            for topic, groups in (data.get("messageRequestModeMap") or {}).items():
                for group, mode in (groups or {}).items():
                    mode = mode or {}
                    found.setdefault(str(group), {})[str(topic)] = {
                        "mode": str(mode.get("mode", "PULL")).upper(),
                        "popShareQueueNum": int(mode.get("popShareQueueNum", 0) or 0),
                    }
            return found

        return parse_body(response, build, what="message request modes", address=broker_addr)

    async def broker_runtime_info(self, broker_addr: str) -> BrokerRuntimeInfo:
        response = await self.remoting.call(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return parse_body(
            response,
            lambda d: BrokerRuntimeInfo({str(k): str(v) for k, v in (d.get("table") or {}).items()}),
            what="runtime info",
            address=broker_addr,
        )

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's effective settings (a properties text body)."""
        response = await self.remoting.call(broker_addr, RequestCode.GET_BROKER_CONFIG)
        config = {}
        for line in response.body.decode("utf-8", "replace").splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.startswith("#"):
                config[key.strip()] = value.strip()
        return config

    async def broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData | None:
        """VIEW_BROKER_STATS_DATA, e.g. ("GROUP_GET_NUMS", "topic@group") for consume TPS.
        None when the broker has no such statistic yet."""
        response = await self.remoting.call(
            broker_addr,
            RequestCode.VIEW_BROKER_STATS_DATA,
            {"statsName": stats_name, "statsKey": stats_key},
            accept=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR),
        )
        if response.code != ResponseCode.SUCCESS:
            return None  # "The stats <key> not exist"
        return parse_body(response, BrokerStatsData.from_wire, what="broker stats", address=broker_addr)
