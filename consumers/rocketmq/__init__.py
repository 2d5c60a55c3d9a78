"""A pure-Python asyncio admin client for Apache RocketMQ's remoting protocol (4.x and 5.x).

No Django imports here: the console, the tests and the command line all use it as is.
"""

from .acl import Credentials
from .client import AdminClient
from .errors import (
    BrokerBusy,
    BrokerError,
    BrokerSystemError,
    ConnectError,
    ConnectionClosed,
    ConsumerNotOnline,
    DeadlineExceeded,
    GroupNotFound,
    NoPermission,
    NotFound,
    NotSupported,
    ProtocolError,
    RequestTimeout,
    RocketMQError,
    TopicNotFound,
    TransportError,
)
from .positions import GroupProgress, Problem, QueueProgress
from .remoting import ClientConfig, deadline, extend_deadline, split_namesrv_list
from .snapshot import ClusterSnapshot, cluster_snapshot, group_progress

__all__ = [
    "AdminClient",
    "BrokerBusy",
    "BrokerError",
    "BrokerSystemError",
    "ClientConfig",
    "ClusterSnapshot",
    "ConnectError",
    "ConnectionClosed",
    "ConsumerNotOnline",
    "Credentials",
    "DeadlineExceeded",
    "GroupNotFound",
    "GroupProgress",
    "NoPermission",
    "NotFound",
    "NotSupported",
    "Problem",
    "ProtocolError",
    "QueueProgress",
    "RequestTimeout",
    "RocketMQError",
    "TopicNotFound",
    "TransportError",
    "cluster_snapshot",
    "deadline",
    "extend_deadline",
    "group_progress",
    "split_namesrv_list",
]
