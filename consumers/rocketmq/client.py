"""AdminClient: the entry point. Operations are grouped by use:

async with AdminClient("127.0.0.1:9876") as client:
    info = await client.topology.cluster_info()
    stats = await client.progress.consume_stats("my-group", info.masters()["broker-a"])
"""

from __future__ import annotations

from .ops.actions import Actions
from .ops.consumequeue import ConsumeQueues
from .ops.messages import Messages
from .ops.progress import Progress
from .ops.topology import Topology
from .remoting import ClientConfig, RemotingClient


class AdminClient:
    def __init__(self, namesrv_addrs: str | list[str] | None = None, *, config: ClientConfig | None = None, **options):
        if config is None:
            config = ClientConfig(namesrv_addrs=namesrv_addrs or [], **options)
        self.config = config
        self.remoting = RemotingClient(config)
        self.topology = Topology(self.remoting, config)
        self.progress = Progress(self.remoting, self.topology)
        self.messages = Messages(self.remoting, config, self.topology)
        self.consume_queues = ConsumeQueues(self.remoting)
        self.actions = Actions(self.remoting, self.topology, self.progress, self.messages)

    async def close(self) -> None:
        await self.remoting.close()

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
