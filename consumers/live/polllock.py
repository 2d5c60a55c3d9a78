"""The per-cluster poll lock: one poll of a cluster at a time, and a dead poller's lock gone as
soon as its heartbeat stops.

A fixed expiry long enough for the slowest poll (deadline + 60 s) kept a killed worker's lock
for over a minute, and the healthy worker skipped every poll meanwhile. Instead the lock lives
POLL_LOCK_TTL seconds and a thread of the holding worker renews it every third of that while the
poll runs: a worker that dies (SIGKILL, OOM, a lost host) stops renewing, and the lock is gone
within POLL_LOCK_TTL. The lock's value names its holder and when it started, so a skipped poll
says who it waited for.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

POLL_LOCK_TTL = 15.0
SILENCE_MARGIN = 1.5  # seconds a beat may be late before its holder counts as silent

_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


@dataclass
class Held:
    """Who holds a lock now, read for a poll that had to skip."""

    worker: str
    since: float
    expires_in: float | None

    def describe(self, now: float) -> str:
        expiry = f"; its heartbeat lock lapses in {self.expires_in:.0f} s unless renewed" if self.expires_in else ""
        return f"another poll of this cluster is running ({self.worker}, for {now - self.since:.0f} s){expiry}"


class PollLock:
    def __init__(self, redis, key: str, *, ttl: float = POLL_LOCK_TTL):
        self.redis, self.key, self.ttl = redis, key, ttl
        self.value = f"{uuid.uuid4().hex}|{socket.gethostname()}:{os.getpid()}|{time.time():.3f}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, *, wait_for_silent_holder: bool = False) -> bool:
        """Take the lock. With `wait_for_silent_holder`, a holder that has missed a heartbeat (a
        killed worker, a lost host) is waited for until its lock lapses, at most the TTL: this
        poll then runs a few seconds late instead of being skipped, which would leave the
        cluster unpolled for a whole interval more. A holder that beats is not waited for."""
        if self._take():
            return True
        if not wait_for_silent_holder:
            return False
        # a beating holder renews every third of the TTL, so more than two thirds stay left (less
        # a margin for a busy machine's late wake-ups); less means a beat was missed
        silent_below = self.ttl * 2 / 3 - SILENCE_MARGIN
        deadline, last = time.monotonic() + self.ttl, None
        while time.monotonic() < deadline:
            ms = self.redis.pttl(self.key)
            if ms == -2:  # gone meanwhile
                if self._take():
                    return True
                continue
            left = ms / 1000
            if ms == -1 or left > silent_below or (last is not None and left > last):
                return False  # no expiry (not a poll lock of ours), or its holder beats
            last = left
            time.sleep(min(0.25, left))
            if self._take():
                return True
        return False

    def _take(self) -> bool:
        if not self.redis.set(self.key, self.value, nx=True, px=int(self.ttl * 1000)):
            return False
        self._thread = threading.Thread(target=self._beat, name=f"poll-lock-{self.key}", daemon=True)
        self._thread.start()
        return True

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                if not self.redis.eval(_RENEW, 1, self.key, self.value, int(self.ttl * 1000)):
                    return  # no longer ours (it lapsed): nothing to renew
            except Exception:
                continue

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.redis.eval(_RELEASE, 1, self.key, self.value)

    def holder(self) -> Held | None:
        raw = self.redis.get(self.key)
        if raw is None:
            return None
        raw = raw.decode() if isinstance(raw, bytes) else raw
        parts = raw.split("|")
        worker = parts[1] if len(parts) == 3 else "unknown worker"
        try:
            since = float(parts[2]) if len(parts) == 3 else time.time()
        except ValueError:
            since = time.time()
        ttl_ms = self.redis.pttl(self.key)
        return Held(worker, since, ttl_ms / 1000 if ttl_ms and ttl_ms > 0 else None)
