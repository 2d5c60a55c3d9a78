"""Fault injection for tests/test_worker_gives_up.py, imported into a worker with `--include`: the
prefork pool's stop never returns, as a warm shutdown that hangs would. Never imported by the console."""

from __future__ import annotations

import time

from celery.concurrency import prefork


def _stop_that_hangs(self) -> None:
    time.sleep(3600)


prefork.TaskPool.on_stop = _stop_that_hangs
