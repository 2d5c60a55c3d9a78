"""The one way any feature reaches a RocketMQ cluster.

`run_on_cluster(cluster, work)` opens an `AdminClient` configured from settings and the
cluster's row (name servers, ACL credentials), runs `work(client)` in a fresh event loop under
a total deadline, and closes the connections. Views, tasks and services are synchronous
Django code; this is the only place that crosses into asyncio for broker work, so timeouts,
credentials and the read-only flag are applied the same way everywhere.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

from django.conf import settings

from ..models import Cluster
from ..rocketmq import AdminClient, ClientConfig, deadline

T = TypeVar("T")


class ReadOnlyCluster(Exception):
    """A mutation was asked of a cluster marked read-only."""

    def __init__(self, cluster: Cluster):
        super().__init__(f"cluster {cluster.name} is read-only: no resets or redrives")
        self.cluster = cluster


def client_config(cluster: Cluster) -> ClientConfig:
    return ClientConfig(
        namesrv_addrs=cluster.namesrv_list,
        credentials=cluster.credentials,
        request_timeout=settings.ROCKETMQ_REQUEST_TIMEOUT,
        connect_timeout=min(settings.ROCKETMQ_CONNECT_TIMEOUT, settings.ROCKETMQ_REQUEST_TIMEOUT),
        max_in_flight=settings.ROCKETMQ_POLL_CONCURRENCY,
        max_frame=settings.ROCKETMQ_MAX_FRAME_MB * 1024 * 1024,
    )


def check_writable(cluster: Cluster) -> None:
    """Raise ReadOnlyCluster for a cluster that refuses mutations."""
    if cluster.read_only:
        raise ReadOnlyCluster(cluster)


@contextlib.asynccontextmanager
async def open_client(cluster: Cluster) -> AsyncIterator[AdminClient]:
    """An admin client for the cluster, closed on exit; for code already inside an event loop."""
    async with AdminClient(config=client_config(cluster)) as client:
        yield client


def run_on_cluster(
    cluster: Cluster,
    work: Callable[[AdminClient], Awaitable[T]],
    *,
    seconds: float | None = None,
    mutation: bool = False,
) -> T:
    """Run `work(client)` against the cluster from synchronous code, within `seconds` in all
    (ROCKETMQ_POLL_DEADLINE by default). A mutation on a read-only cluster is refused before
    any connection is made."""
    if mutation:
        check_writable(cluster)

    result: list[T] = []

    async def bounded() -> None:
        async with open_client(cluster) as client:
            with deadline(settings.ROCKETMQ_POLL_DEADLINE if seconds is None else seconds):
                result.append(await work(client))

    # why the result is handed over in a list, not as the task's: on Python 3.11, asyncio.run
    # in the main thread checks its SIGINT handler on the way out, and signal.getsignal formats
    # a ValueError with repr() of that handler, which holds the main task, whose repr holds
    # repr(result): for a 10,000-group poll, 820,000 dataclass reprs, 0.9 s of every poll
    asyncio.run(bounded())
    return result[0]


class ClusterSession:
    """Admin clients kept open for a job of many steps (a redrive's windows): their event loop
    runs in a thread of its own, so connections, routes and queue caches outlive each step
    while the caller stays synchronous Django code between steps (checkpoints, records).

    `client` sends; `reader` is a second client with connections of its own, so reads of the
    next step are not queued behind the requests of the step still in flight."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"cluster-{cluster.name}", daemon=True)
        self.client: AdminClient | None = None
        self.reader: AdminClient | None = None

    def _submit(self, coroutine: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def open(self) -> ClusterSession:
        self.thread.start()
        self.client = AdminClient(config=client_config(self.cluster))
        self._submit(self.client.__aenter__())
        self.reader = AdminClient(config=client_config(self.cluster))
        self._submit(self.reader.__aenter__())
        return self

    def run(self, work: Callable[[AdminClient], Awaitable[T]], *, seconds: float) -> T:
        """One step: `work(client)` within `seconds`."""
        return self.start(work, seconds=seconds).result()

    def start(self, work: Callable[[AdminClient], Awaitable[T]], *, seconds: float) -> concurrent.futures.Future[T]:
        """Begin a step without waiting for it, so the caller can write to the database while
        the broker work goes on; `.result()` waits for it."""

        async def bounded() -> T:
            with deadline(seconds):
                return await work(self.client)

        return asyncio.run_coroutine_threadsafe(bounded(), self.loop)

    def close(self) -> None:
        try:
            for client in (self.reader, self.client):
                if client is not None:
                    self._submit(client.__aexit__(None, None, None))
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()


@contextlib.contextmanager
def cluster_session(cluster: Cluster, *, mutation: bool = False) -> Iterator[ClusterSession]:
    """A ClusterSession, closed on exit; a mutation on a read-only cluster is refused first."""
    if mutation:
        check_writable(cluster)
    session = ClusterSession(cluster)
    try:
        yield session.open()
    finally:
        session.close()
