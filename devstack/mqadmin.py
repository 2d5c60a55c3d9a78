"""mqadmin, the test oracle: real RocketMQ tools commands with their output parsed.

`MQAdmin` keeps one JVM (harness/MQAdminServer.java) that runs each command through the same
MQAdminStartup code as the mqadmin script; `run_fresh` starts a new JVM per call, exactly as
the script does, for checking that both agree. mqadmin exits 0 even when a command failed,
so a stack trace on stderr (or a known failure line) raises MQAdminError.

Not every command can run twice in one JVM: MQAdminStartup keeps its command objects in a static
list, and queryMsgByUniqueKey keeps in its object the admin client of its first run (shut down
when that run ends), so from the second run on it answers "no message" (CODE: 208). Run it with
`run_fresh`.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .processes import ManagedProcess, StartupError
from .runtime import Runtime

MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
_FAILURE = re.compile(r"(Exception|Error)(:|\s+at\s)|^\s+at [\w.$]+\(", re.M)


class MQAdminError(RuntimeError):
    def __init__(self, args: list[str], out: str, err: str):
        super().__init__(f"mqadmin {' '.join(args)} failed:\n{err[-3000:] or out[-3000:]}")
        self.out = out
        self.err = err


@dataclass(frozen=True)
class MQAdminResult:
    out: str
    err: str
    millis: int


class MQAdmin:
    def __init__(self, runtime: Runtime, namesrv_addr: str, home: Path):
        self.runtime = runtime
        self.namesrv_addr = namesrv_addr
        self.home = home
        self._lock = threading.Lock()
        self._answers: queue.Queue = queue.Queue()
        home.mkdir(parents=True, exist_ok=True)
        self.process = self._start()

    def _java(self, main_class: str, args: list[str]) -> list[str]:
        return self.runtime.java(
            main_class,
            args,
            home=self.home,
            heap="256m",
            extra=[
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Drmq.logback.configurationFile=rmq.tools.logback.xml",
            ],
        )

    def _start(self) -> ManagedProcess:
        process = ManagedProcess(
            "mqadmin",
            self._java("rmqconsole.harness.MQAdminServer", []),
            log_path=self.home / "mqadmin.stderr",
            stdin=subprocess.PIPE,
            pipe_stdout=True,
        )
        threading.Thread(target=self._read, args=(process,), name="mqadmin-answers", daemon=True).start()
        ready = self._answers.get(timeout=60)
        if ready is None or ready.get("event") != "ready":
            raise StartupError(f"mqadmin runner did not start:\n{process.log_tail()}")
        return process

    def _read(self, process: ManagedProcess) -> None:
        for line in process.popen.stdout:
            if line.startswith(b"{"):
                self._answers.put(json.loads(line))
        self._answers.put(None)

    def run(self, *args: str, timeout: float = 120, check: bool = True) -> MQAdminResult:
        """Run `mqadmin <args> -n <namesrv>` in the long-lived JVM."""
        argv = [*args, "-n", self.namesrv_addr]
        with self._lock:
            if not self.process.alive():
                self.process.stop(1)
                self.process = self._start()
            self.process.popen.stdin.write((json.dumps({"args": argv}) + "\n").encode())
            self.process.popen.stdin.flush()
            try:
                answer = self._answers.get(timeout=timeout)
            except queue.Empty:
                raise MQAdminError(argv, "", f"no answer after {timeout}s") from None
        if answer is None:
            raise MQAdminError(argv, "", f"mqadmin runner exited:\n{self.process.log_tail()}")
        result = MQAdminResult(answer["out"], answer["err"], answer["millis"])
        if check:
            _check(argv, result)
        return result

    def run_fresh(self, *args: str, timeout: float = 120, check: bool = True, attempts: int = 3) -> MQAdminResult:
        """Run mqadmin in a new JVM, as the mqadmin script does. A run whose own request timed out
        on the wire is run again (up to `attempts`): a cold JVM on loaded cores spends most of its
        client's 3 s timeout starting, which says nothing of what the run was to check. Seen in
        two forms: "wait response on the channel <namesrv> timeout, 654(ms)" (a full suite here)
        and "invokeSync call the addr[<namesrv>] timeout" (CI, the route lookup of
        queryMsgByUniqueKey: the time was spent before the request was written)."""
        argv = [*args, "-n", self.namesrv_addr]
        result = self._fresh(argv, timeout)
        for _ in range(attempts - 1):
            if not _TRANSPORT_TIMEOUT.search(result.err):
                break
            result = self._fresh(argv, timeout)
        if check:
            _check(argv, result)
        return result

    def _fresh(self, argv: list[str], timeout: float) -> MQAdminResult:
        completed = subprocess.run(self._java(MQADMIN_MAIN, argv), capture_output=True, text=True, timeout=timeout)
        # logback prints its status lines to stdout at start-up; they are not mqadmin output
        out = "\n".join(line for line in completed.stdout.splitlines() if "|-" not in line[:40])
        return MQAdminResult(out, completed.stderr, 0)

    def close(self) -> None:
        if self.process.alive():
            self.process.popen.stdin.close()
        self.process.stop(5)


_TRANSPORT_TIMEOUT = re.compile(
    r"RemotingTimeoutException: (wait response on the channel|invokeSync call the addr\[[^\]]*\] timeout)"
)


def _check(argv: list[str], result: MQAdminResult) -> None:
    if _FAILURE.search(result.err) or "Exception" in result.out[:400]:
        raise MQAdminError(argv, result.out, result.err)


# Parsers. Column layouts are those of rocketmq-tools 5.3.3 (ConsumerProgressSubCommand,
# TopicStatusSubCommand, ConsumerConnectionSubCommand, ResetOffsetByTimeCommand).


@dataclass(frozen=True)
class ProgressRow:
    topic: str
    broker: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    client_ip: str | None
    diff: int
    inflight: int
    last_time: str | None


@dataclass(frozen=True)
class ConsumerProgress:
    rows: list[ProgressRow]
    tps: float
    diff_total: int
    inflight_total: int

    def row(self, topic: str, broker: str, queue_id: int) -> ProgressRow:
        return next(r for r in self.rows if (r.topic, r.broker, r.queue_id) == (topic, broker, queue_id))


_PROGRESS_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+()(-?\d+)\s+(-?\d+)\s+(.*)$")
# with -s true a client column comes after the consumer offset
_PROGRESS_ROW_WITH_CLIENT = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(-?\d+)\s+(-?\d+)\s+(.*)$")


def parse_consumer_progress(text: str) -> ConsumerProgress:
    rows = []
    with_client = "#Client IP" in text
    pattern = _PROGRESS_ROW_WITH_CLIENT if with_client else _PROGRESS_ROW
    for line in text.splitlines():
        if not line.strip() or line.startswith("#") or ":" in line.split()[0]:
            continue
        match = pattern.match(line.rstrip())
        if not match:
            continue
        topic, broker, qid, broker_offset, consumer_offset, client, diff, inflight, last = match.groups()
        rows.append(
            ProgressRow(
                topic=topic,
                broker=broker,
                queue_id=int(qid),
                broker_offset=int(broker_offset),
                consumer_offset=int(consumer_offset),
                client_ip=client if with_client and client != "N/A" else None,
                diff=int(diff),
                inflight=int(inflight),
                last_time=None if last.strip() == "N/A" else last.strip(),
            )
        )
    tps = re.search(r"^Consume TPS: ([\d.]+)", text, re.M)
    diff = re.search(r"^Consume Diff Total: (-?\d+)", text, re.M)
    inflight = re.search(r"^Consume Inflight Total: (-?\d+)", text, re.M)
    if diff is None:
        raise ValueError(f"not a consumerProgress output:\n{text}")
    return ConsumerProgress(
        rows, float(tps.group(1)) if tps else 0.0, int(diff.group(1)), int(inflight.group(1)) if inflight else 0
    )


@dataclass(frozen=True)
class TopicStatusRow:
    broker: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_updated: str


def parse_topic_status(text: str) -> list[TopicStatusRow]:
    rows = []
    for line in text.splitlines():
        match = re.match(r"^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*(.*)$", line.strip())
        if match and not line.startswith("#"):
            broker, qid, min_offset, max_offset, last = match.groups()
            rows.append(TopicStatusRow(broker, int(qid), int(min_offset), int(max_offset), last.strip()))
    return rows


@dataclass(frozen=True)
class ConnectionRow:
    client_id: str
    client_addr: str
    language: str
    version: str


@dataclass(frozen=True)
class ConsumerConnectionInfo:
    connections: list[ConnectionRow]
    subscriptions: dict[str, str]
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None


def parse_consumer_connection(text: str) -> ConsumerConnectionInfo:
    connections, subscriptions = [], {}
    section = "clients"
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Below is subscription"):
            section = "subscriptions"
            continue
        if not stripped or stripped.startswith("#") or ":" in stripped.split()[0]:
            continue
        parts = stripped.split()
        if section == "clients" and len(parts) >= 4:
            # rows start with a sequence number in some releases: take the last four columns
            connections.append(ConnectionRow(*parts[-4:]))
        elif section == "subscriptions" and len(parts) >= 2:
            subscriptions[parts[-2]] = parts[-1]
    fields = dict(re.findall(r"^(ConsumeType|MessageModel|ConsumeFromWhere): (\S+)", text, re.M))
    return ConsumerConnectionInfo(
        connections=connections,
        subscriptions=subscriptions,
        consume_type=fields.get("ConsumeType"),
        message_model=fields.get("MessageModel"),
        consume_from_where=fields.get("ConsumeFromWhere"),
    )


def parse_reset_offset(text: str) -> dict[tuple[str, int], int]:
    """resetOffsetByTime output: (broker, queue id) -> new offset, for both output forms
    (server-side: broker qid offset; offline fallback: broker qid brokerOffset consumerOffset
    timestampOffset resetOffset)."""
    result = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) in (3, 6) and parts[1].isdigit() and all(p.lstrip("-").isdigit() for p in parts[1:]):
            result[(parts[0], int(parts[1]))] = int(parts[-1])
    return result


def parse_topic_list(text: str) -> list[str]:
    return sorted(line.strip() for line in text.splitlines() if line.strip() and " " not in line.strip())


def parse_consumer_config(text: str) -> dict[str, dict[str, str]]:
    """getConsumerConfig: broker name -> {key: value}, from '=== Cluster:broker ===' sections."""
    result: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        header = re.match(r"^=+([^=:]+):([^=]+?)=+$", line.strip())
        if header:
            current = result.setdefault(header.group(2), {})
        elif current is not None and "=" in line:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return result


_MESSAGE_FIELD = re.compile(r"^([A-Z][A-Za-z ]*?):\s+(.*)$")
_TRACK = re.compile(r"MessageTrack \[consumerGroup=(.*?), trackType=(\w+), exceptionDesc=(.*)\]")


def parse_message(text: str) -> dict[str, str]:
    """queryMsgById, queryMsgByUniqueKey, queryMsgByOffset: the printed message, field by field
    ("Topic", "Tags" (bracketed), "Keys" (bracketed), "Queue ID", "Queue Offset", "CommitLog
    Offset", "Born Host", "Store Host", "OffsetID", ...); the first message when several."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        found = _MESSAGE_FIELD.match(line)
        if found and found.group(1) not in fields:
            fields[found.group(1)] = found.group(2).strip()
    return fields


def parse_message_tracks(text: str) -> dict[str, tuple[str, str]]:
    """The message track those commands print after the message: group -> (trackType,
    exceptionDesc), e.g. CONSUMED, NOT_CONSUME_YET, CONSUMED_BUT_FILTERED, NOT_ONLINE."""
    return {m.group(1): (m.group(2), m.group(3)) for m in _TRACK.finditer(text)}


def parse_key_query(text: str) -> list[tuple[str, int, int]]:
    """queryMsgByKey: (message id (the client's UNIQ_KEY), queue id, queue offset) per row."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            rows.append((parts[0], int(parts[1]), int(parts[2])))
    return rows
