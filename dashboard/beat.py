"""Celery beat on several hosts with exactly one sending: no single point of failure.

redbeat (celery-redbeat) keeps the schedule in Redis: each entry's last run is written there
before its task is sent, so whichever beat sends next carries on from it (no entry twice, and
one that fell due while no beat was active is sent once when one is). A lock in Redis, held by
the active beat and renewed at every tick (at least every CELERY_BEAT_MAX_LOOP_INTERVAL s),
says which beat that is; the others tick without sending and take the lock within
BEAT_LOCK_SECONDS of the active one's last renewal.

Why not redbeat's own lock: it is taken once, blocking, when beat starts. A beat that then
loses it (Redis restarted empty, or the lock expired while the host was paused) raises at its
next tick and exits, and one started while Redis is down starts with no lock and fails at its
first tick; a supervisor would have to restart it either way. Here a beat that cannot reach
Redis, or does not hold the lock, sends nothing and asks again shortly; a beat that takes the
lock installs the schedule's entries again first (Redis may have come back empty).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid

from django.conf import settings
from redbeat import RedBeatScheduler
from redbeat.schedulers import get_redis
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# renew the lock only while it is still ours (a beat paused past the timeout finds it taken)
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
KEY_PREFIX = "rocketmq-console:beat"  # the schedule's keys in Redis
RETRY_SECONDS = 1.0  # after Redis failed to answer


class OneActiveScheduler(RedBeatScheduler):
    def __init__(self, app, **kwargs):
        # redbeat reads its settings from the Celery app's own names, not Django's CELERY_ ones
        app.conf.update(redbeat_redis_url=settings.REDIS_URL, redbeat_redis_options={}, redbeat_key_prefix=KEY_PREFIX)
        super().__init__(app, **kwargs)
        self.lock_key = None  # redbeat's own lock, taken once at start: see above why not
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lock_name = f"{self.app.redbeat_conf.key_prefix}:active"
        self.active = self.installed = self.standing_by = False

    def setup_schedule(self):
        """Nothing at start: the entries are installed by the beat that takes the lock."""

    def tick(self, **kwargs) -> float:
        try:
            if not self._hold():
                return self.max_interval
            if not self.installed:
                super().setup_schedule()  # keeps each entry's last run that Redis holds
                self.installed = True
            return super().tick(**kwargs)
        except RedisError as exc:
            logger.warning("beat: Redis did not answer (%s): sending nothing, trying again in %s s", exc,
                           RETRY_SECONDS)  # fmt: skip
            return RETRY_SECONDS

    def _hold(self) -> bool:
        """Renew the lock, or take it if nobody holds it; whether this beat is the active one."""
        client = get_redis(self.app)
        expiry_ms = int(settings.BEAT_LOCK_SECONDS * 1000)
        if client.eval(_RENEW, 1, self.lock_name, self.holder, expiry_ms):
            return True
        if client.set(self.lock_name, self.holder, nx=True, px=expiry_ms):
            logger.info("beat: active: holds %s (%s)", self.lock_name, self.holder)
            self.active, self.installed, self.standing_by = True, False, False
            return True
        if not self.standing_by:  # said once each time this beat stands by
            holder = client.get(self.lock_name)  # a str: redbeat's client decodes
            logger.info("beat: standing by: %s is held by %s", self.lock_name, holder or "nobody")
            self.active, self.standing_by = False, True
        return False

    def close(self):
        """A beat stopped on purpose hands over at once rather than after the lock's timeout."""
        if self.active:
            try:
                get_redis(self.app).eval(_RELEASE, 1, self.lock_name, self.holder)
                logger.info("beat: released %s", self.lock_name)
            except RedisError as exc:
                logger.warning("beat: could not release %s (%s): it expires in %s s", self.lock_name, exc,
                               settings.BEAT_LOCK_SECONDS)  # fmt: skip
        self.active = False
        super().close()

    @property
    def info(self) -> str:  # beat's banner (not the Redis URL: it may hold a password)
        return f"    . lock -> {self.lock_name} ({settings.BEAT_LOCK_SECONDS} s, one active beat)"
