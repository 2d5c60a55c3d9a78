"""The one Redis connection of this process (settings.REDIS_URL), and whether Redis answers.

Redis holds Celery's queue and the latest snapshot of every cluster. When it does not answer,
the pages that read it answer 503 (consumers/web/middleware.py) with the outage noted here: since
when, where, and the error."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import threading
from urllib.parse import urlparse

import redis
from django.conf import settings
from django.utils import timezone

# A page must fail fast when Redis is down: a refused connection fails at once, a host that
# does not answer at all (down, packets dropped) after CONNECT_TIMEOUT, a server that accepted
# the connection but hangs after SOCKET_TIMEOUT. No retries (redis-py's default for a client
# made from a URL): a retry would only make the page wait longer. Options in REDIS_URL's query
# string (e.g. ?socket_connect_timeout=1) override these.
CONNECT_TIMEOUT = 3
SOCKET_TIMEOUT = 5

UNAVAILABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class _Client(redis.Redis):
    def execute_command(self, *args, **options):
        result = super().execute_command(*args, **options)
        if _outage is not None:
            note_answered()  # Redis answers again: the outage is over
        return result


@functools.cache
def _client(url: str) -> redis.Redis:
    return _Client.from_url(
        url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=CONNECT_TIMEOUT, health_check_interval=30
    )


def get_redis() -> redis.Redis:
    return _client(settings.REDIS_URL)


@dataclasses.dataclass(frozen=True)
class Outage:
    since: dt.datetime  # the first failure of this outage seen by this process
    where: str  # host:port (or socket path), never the password
    error: str  # the latest error

    @property
    def message(self) -> str:
        since = timezone.localtime(self.since).strftime("%Y-%m-%d %H:%M:%S %Z")
        return f"Live state unavailable since {since}: Redis at {self.where} does not answer ({self.error})"


# Since when Redis has not answered is kept in this process's memory only: each web process
# knows the first failure it saw itself, and a restarted process starts counting again at its
# own first failure. That is enough for a banner; nothing else depends on it.
_lock = threading.Lock()
_outage: Outage | None = None


def unavailable_cause(exception: BaseException) -> Exception | None:
    """The Redis connection error or timeout behind `exception` (itself, or what it was raised
    from: Celery's OperationalError when a task cannot be queued), or None."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        if isinstance(exception, UNAVAILABLE):
            return exception
        seen.add(id(exception))
        exception = exception.__cause__ or exception.__context__
    return None


def note_unavailable(error: Exception) -> Outage:
    """Record that Redis did not answer; returns the outage (its start kept from the first failure)."""
    global _outage
    where = redis_location(settings.REDIS_URL)
    text = _without_password(str(error) or type(error).__name__, settings.REDIS_URL)
    with _lock:
        if _outage is None or _outage.where != where:
            _outage = Outage(since=timezone.now(), where=where, error=text)
        else:
            _outage = dataclasses.replace(_outage, error=text)
        return _outage


def note_answered() -> None:
    global _outage
    with _lock:
        _outage = None


def current_outage() -> Outage | None:
    return _outage


def redis_location(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme == "unix":
        return parsed.path
    return f"{parsed.hostname or '127.0.0.1'}:{parsed.port or 6379}"


def _without_password(text: str, url: str) -> str:
    password = urlparse(url).password
    return text.replace(password, "***") if password else text
