"""Drive the Java traffic harness (harness/Harness.java) from Python.

One harness JVM hosts many producers and consumers, each under an id. Every message sent and
every delivery is reported back as an event; `ProducerRun` and `ConsumerRun` keep those
events so tests can compare what the console shows with what really happened.
"""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .processes import ManagedProcess, StartupError
from .runtime import Runtime


class HarnessError(RuntimeError):
    pass


@dataclass(frozen=True)
class SentMessage:
    seq: int
    msg_id: str
    offset_msg_id: str
    broker: str
    queue_id: int
    queue_offset: int
    key: str
    tag: str
    kind: str
    body: bytes


class Harness:
    def __init__(self, runtime: Runtime, namesrv_addr: str, home: Path, *, name: str = "harness"):
        self.name = name
        self.home = home
        self._events: dict[str | None, list[dict]] = defaultdict(list)
        self._condition = threading.Condition()
        self._ids = 0
        home.mkdir(parents=True, exist_ok=True)
        self.process = ManagedProcess(
            name,
            runtime.java(
                "rmqconsole.harness.Harness",
                [namesrv_addr],
                home=home,
                heap="384m",
                grpc=True,
                extra=[
                    "-Drmq.logback.configurationFile=rmq.client.logback.xml",
                    # the default 20 s rebalance wait would make new consumers look idle
                    "-Drocketmq.client.rebalance.waitInterval=1000",
                ],
            ),
            log_path=home / f"{name}.stderr",
            stdin=subprocess.PIPE,
        )
        # The process writes events to stdout; ManagedProcess sent it to the log, so read
        # them from there with a tailing thread.
        self._reader = threading.Thread(target=self._read_events, name=f"{name}-events", daemon=True)
        self._reader.start()
        self.wait_for(lambda: self._events[None] and self._events[None][0]["event"] == "ready", 60, "harness ready")

    # commands

    def produce(self, topic: str, count: int, *, wait: bool = True, timeout: float = 120, **options) -> ProducerRun:
        run = ProducerRun(self, self._new_id("p"))
        self._send({"cmd": "produce", "id": run.id, "topic": topic, "count": count, **options})
        if wait:
            run.wait_done(timeout)
        return run

    def consume(self, group: str, topic: str, *, mode: str = "healthy", wait_started: bool = True, **options):
        run = ConsumerRun(self, self._new_id("c"), group)
        self._send({"cmd": "consume", "id": run.id, "group": group, "topic": topic, "mode": mode, **options})
        if wait_started:
            run.wait_started()
        return run

    def grpc_consume(self, endpoint: str, group: str, topic: str, *, kind: str = "simple", mode: str = "healthy",
                     wait_started: bool = True, timeout: float = 90, **options) -> GrpcConsumerRun:  # fmt: skip
        """A RocketMQ 5 SDK consumer (SimpleConsumer or PushConsumer) through the proxy at `endpoint`."""
        run = GrpcConsumerRun(self, self._new_id("g"), group)
        command = {"cmd": "grpc-consume", "id": run.id, "endpoint": endpoint, "group": group, "topic": topic}
        self._send({**command, "kind": kind, "mode": mode, **options})
        if wait_started:
            run.wait_started(timeout)
        return run

    def close(self) -> None:
        if self.process.alive():
            try:
                self._send({"cmd": "exit"})
                self.process.popen.wait(30)
            except (HarnessError, OSError, subprocess.TimeoutExpired):
                pass
        self.process.stop(5)

    # events

    def events(self, run_id: str) -> list[dict]:
        with self._condition:
            return list(self._events[run_id])

    def wait_for(self, predicate: Callable[[], object], timeout: float, what: str):
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                result = predicate()
                if result:
                    return result
                errors = [e for e in self._events_all() if e.get("event") == "error"]
                if errors:
                    raise HarnessError(f"harness reported: {errors}")
                left = deadline - time.monotonic()
                if left <= 0 or not self.process.alive():
                    raise HarnessError(f"{what}: not reached after {timeout}s\n{self.process.log_tail()}")
                self._condition.wait(min(left, 0.5))

    def _events_all(self) -> list[dict]:
        return [e for events in self._events.values() for e in events]

    def _read_events(self) -> None:
        position = 0
        buffer = b""
        while True:
            try:
                with open(self.process.log_path, "rb") as log:
                    log.seek(position)
                    chunk = log.read()
            except OSError:
                chunk = b""
            position += len(chunk)
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            parsed = []
            for line in lines:
                if line.startswith(b'{"event"'):
                    parsed.append(json.loads(line))
            if parsed:
                with self._condition:
                    for event in parsed:
                        self._events[event.get("id")].append(event)
                    self._condition.notify_all()
            if not chunk:
                if not self.process.alive():
                    with self._condition:
                        self._condition.notify_all()
                    return
                time.sleep(0.05)

    def _send(self, command: dict) -> None:
        if not self.process.alive():
            raise HarnessError(f"harness is not running:\n{self.process.log_tail()}")
        stdin = self.process.popen.stdin
        stdin.write((json.dumps(command) + "\n").encode())
        stdin.flush()

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids}"


class _Run:
    def __init__(self, harness: Harness, run_id: str):
        self.harness = harness
        self.id = run_id

    def events(self, kind: str | None = None) -> list[dict]:
        return [e for e in self.harness.events(self.id) if kind is None or e["event"] == kind]

    def stop(self, timeout: float = 60) -> dict:
        self.harness._send({"cmd": "stop", "id": self.id})
        return self.harness.wait_for(lambda: next(iter(self.events("stopped")), None), timeout, f"{self.id} stopped")


class ProducerRun(_Run):
    def wait_done(self, timeout: float = 120) -> int:
        done = self.harness.wait_for(lambda: self.events("produced"), timeout, f"{self.id} produced")
        return done[0]["count"]

    def stop(self, timeout: float = 60) -> dict:
        self.harness._send({"cmd": "stop", "id": self.id})
        return self.harness.wait_for(lambda: next(iter(self.events("produced")), None), timeout, f"{self.id} done")

    @property
    def sent(self) -> list[SentMessage]:
        return [
            SentMessage(
                seq=e["seq"],
                msg_id=e["msgId"],
                offset_msg_id=e["offsetMsgId"],
                broker=e["broker"],
                queue_id=e["queueId"],
                queue_offset=e["queueOffset"],
                key=e["key"],
                tag=e["tag"],
                kind=e["kind"],
                body=base64.b64decode(e["body"]),
            )
            for e in self.events("sent")
        ]


class ConsumerRun(_Run):
    def __init__(self, harness: Harness, run_id: str, group: str):
        super().__init__(harness, run_id)
        self.group = group

    def wait_started(self, timeout: float = 60) -> str:
        started = self.harness.wait_for(lambda: self.events("started"), timeout, f"{self.id} started")
        return started[0]["clientId"]

    @property
    def client_id(self) -> str:
        return self.events("started")[0]["clientId"]

    def release(self) -> None:
        self.harness._send({"cmd": "release", "id": self.id})

    @property
    def deliveries(self) -> list[dict]:
        return self.events("received")

    @property
    def acked_ids(self) -> set[str]:
        return {e["msgId"] for e in self.events("acked")}

    def wait_acked(self, count: int, timeout: float = 60) -> None:
        self.harness.wait_for(lambda: len(self.events("acked")) >= count, timeout, f"{self.id} acked {count}")

    def wait_delivered(self, predicate: Callable[[list[dict]], bool], timeout: float = 60, what: str = "") -> None:
        self.harness.wait_for(lambda: predicate(self.deliveries), timeout, what or f"{self.id} deliveries")


class GrpcConsumerRun(ConsumerRun):
    """Its counts are the client's own: received, acked, failed, in flight (received, not
    acked, still invisible), distinct messages and the most deliveries of one."""

    def status(self, timeout: float = 30) -> dict:
        seen = len(self.events("status"))
        self.harness._send({"cmd": "status", "id": self.id})
        return self.harness.wait_for(
            lambda: self.events("status")[seen] if len(self.events("status")) > seen else None, timeout, "status"
        )

    def wait_counts(self, predicate: Callable[[dict], bool], timeout: float = 60, what: str = "") -> dict:
        deadline = time.monotonic() + timeout
        while True:
            counts = self.status()
            if predicate(counts):
                return counts
            if time.monotonic() > deadline:
                raise HarnessError(f"{self.id} {what or 'counts'} not reached after {timeout}s: {counts}")
            time.sleep(0.5)


__all__ = ["ConsumerRun", "GrpcConsumerRun", "Harness", "HarnessError", "ProducerRun", "SentMessage", "StartupError"]
