"""Where a poll's time goes: seconds per stage, kept on the poll's result and its cluster's
meta (the clusters page and bench/bench_poll.py print them)."""

from __future__ import annotations

import time
from contextlib import contextmanager


class Stages:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def timing(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - started, 4)
