"""Fault injection for tests/test_worker_gives_up.py, imported into a worker with `--include`: the
consumer's shutdown fails as it once did under a loaded suite, in kombu's `ignore_errors` given a
connection already gone (None) and a call that failed on it: "AttributeError: 'NoneType' object
has no attribute 'connection_errors'". Never imported by the console."""

from __future__ import annotations

from celery.worker.consumer import tasks
from kombu.common import ignore_errors


def _cancel_on_the_lost_connection() -> None:
    raise ConnectionError("the connection is gone")


def _shutdown_that_fails(self, c) -> None:
    ignore_errors(None, _cancel_on_the_lost_connection)


tasks.Tasks.shutdown = _shutdown_that_fails
