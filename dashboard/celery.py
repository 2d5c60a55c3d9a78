"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import signal
import sys
import threading
import time
import traceback

from billiard.process import active_children
from celery import Celery
from celery.exceptions import WorkerShutdown
from celery.worker.consumer import Consumer
from kombu.exceptions import OperationalError

from dashboard import broker_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
# redis:// and rediss:// brokers: kombu's Redis transport with the fix of a worker that crashed
# when Redis went away while a task ran (dashboard/broker_transport.py), before any connection
broker_transport.register()

# Each feature package of the console keeps its own tasks module.
FEATURE_PACKAGES = ["consumers.live", "consumers.changes", "consumers.dlq", "consumers.stats", "consumers.reports"]

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(FEATURE_PACKAGES)


logger = logging.getLogger(__name__)

# sysexits.h: a service the program needs is unavailable (systemd shows it; Restart= acts on it)
EX_UNAVAILABLE = 69


class ReconnectingConsumer(Consumer):
    """The worker's consumer, trying to reconnect to a lost broker at least every
    CELERY_BROKER_RECONNECT_MAX_SECONDS (kombu ramps 2, 4, 6 ... up to a fixed 30 s): a worker is back
    within seconds of Redis, not half a minute later. After CELERY_BROKER_GIVE_UP_SECONDS without
    a broker the worker exits non-zero, so that supervision restarts it rather than a process
    that looks alive and does nothing."""

    def ensure_connected(self, conn):
        from django.conf import settings

        most = settings.CELERY_BROKER_RECONNECT_MAX_SECONDS
        give_up = settings.CELERY_BROKER_GIVE_UP_SECONDS or None
        conn.ensure_connection = functools.partial(
            conn.ensure_connection, interval_start=min(1, most), interval_step=1, interval_max=most, timeout=give_up
        )
        try:
            return super().ensure_connected(conn)
        except (OperationalError, *conn.connection_errors) as exc:  # kombu re-raises as its own
            if give_up is None:
                raise
            logger.critical("no broker at %s for %s s, giving up (exit %s): %s", conn.as_uri(), give_up,
                            EX_UNAVAILABLE, exc)  # fmt: skip
            exit_if_shutdown_hangs(SHUTDOWN_GRACE_SECONDS)
            # whichever way the shutdown ends, the status says why: once, under a loaded suite,
            # Celery's own shutdown failed on the lost connection (kombu: 'NoneType' object has no
            # attribute 'connection_errors') and the worker exited 1
            atexit.register(_exit_unavailable)
            raise WorkerShutdown(EX_UNAVAILABLE) from exc


def _exit_unavailable() -> None:
    """The last word of a worker that gave up: its logs flushed, exit 69 (run first at exit:
    registered last)."""
    logging.shutdown()
    os._exit(EX_UNAVAILABLE)


# How long a worker that gave up waits, once no task runs, for Celery's own warm shutdown.
SHUTDOWN_GRACE_SECONDS = 20


def exit_if_shutdown_hangs(grace: float) -> threading.Thread:
    """Exit 69 for sure. Celery's warm shutdown after giving up waits for the running tasks, which
    is right: each has its time limit, and its work is on the brokers and the database, not in
    Redis. But a shutdown that still has not ended `grace` seconds after the last task leaves a
    process that looks alive and does nothing, which is what giving up is meant to end (it was
    seen once under a loaded suite: "giving up" logged, no exit in 60 s). Then every thread's stack
    goes to the log (why it hung), the pool's processes are terminated and the process exits."""

    def watch() -> None:
        from celery.worker import state

        idle_since = time.monotonic()
        while time.monotonic() - idle_since < grace:
            time.sleep(0.5)
            if state.active_requests:
                idle_since = time.monotonic()
        try:
            logger.critical("the shutdown after giving up has not ended %s s after the last task; exiting %s:\n%s",
                            grace, EX_UNAVAILABLE, _stacks())  # fmt: skip
            children = active_children()
            for child in children:
                child.terminate()
            # gone before this process is: a child still dying when it exits was seen left behind
            until = time.monotonic() + 3
            for child in children:
                child.join(max(0.0, until - time.monotonic()))
                if child.is_alive():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child.pid, signal.SIGKILL)  # billiard's processes have no kill()
        finally:
            os._exit(EX_UNAVAILABLE)

    watchdog = threading.Thread(target=watch, name="give-up-watchdog", daemon=True)
    watchdog.start()
    return watchdog


def _stacks() -> str:
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "\n".join(
        f"thread {names.get(ident, ident)}:\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in sys._current_frames().items()
    )
