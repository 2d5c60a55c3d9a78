"""kombu's Redis transport, with one fix: a channel whose connection was dropped can still reach Redis.

When the worker loses Redis, Celery's consumer (celery/worker/consumer/consumer.py,
on_connection_error_after_connected) first calls `connection.collect()`, which closes the channel
and then detaches the transport from the connection (`transport.client = None`), then calls
`connection.close()`, which closes the same channel again. The first close stops at the
BRPOP reply it reads before anything else (kombu#1733; Redis is gone, so it raises a connection
error) and leaves the channel open; the second one restores the unacknowledged messages, whose
Redis client is built from `channel.connection.client`, now None:
`AttributeError: 'NoneType' object has no attribute 'hostname'` in `Channel._connparams`. That is
not a connection error: it escapes, the worker logs "Unrecoverable error", takes no task until
its running tasks end and exits 1 (issue 44; the same error, from another caller, is
https://github.com/celery/kombu/issues/582). The acknowledgement of a late-acked task that was
running meanwhile goes through that same channel later, and fails in the same place.

Here each channel remembers the connection parameters it first built (the broker's address,
credentials, database: the same for the channel's whole life) and uses them once the transport
is detached. The restore during the outage then fails as a connection error, which kombu and
Celery ignore there, the worker reconnects, and the running task's acknowledgement reaches Redis
once it is back. tests/test_redis_outage.py fails without it.

dashboard/celery.py registers it, before the app makes any connection, as the transport of the
redis:// and rediss:// schemes in kombu's table of schemes (kombu.transport.TRANSPORT_ALIASES,
where kombu looks a broker URL's scheme up): every process of the console uses it, its logs
still say redis://, and kombu's rediss:// defaults still apply. (CELERY_BROKER_TRANSPORT set to
this class would lose both: kombu would name the class in the logs and treat rediss:// as plain.)
"""

from __future__ import annotations

import kombu.transport
from kombu.transport import redis

SCHEMES = ("redis", "rediss")


class Channel(redis.Channel):
    def _connparams(self, asynchronous=False):
        known = self.__dict__.setdefault("_known_connparams", {})
        transport = self.connection
        if transport is not None and transport.client is not None:
            known[asynchronous] = super()._connparams(asynchronous=asynchronous)
        elif asynchronous not in known:  # never connected: nothing to restore or acknowledge
            raise redis.get_redis_ConnectionError()("the channel's connection was closed")
        return dict(known[asynchronous])


class Transport(redis.Transport):
    Channel = Channel


def register() -> None:
    """Make this the transport of redis:// and rediss:// broker URLs in this process."""
    for scheme in SCHEMES:
        kombu.transport.TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
        kombu.transport._transport_cache.pop(scheme, None)  # in case kombu resolved the scheme already
