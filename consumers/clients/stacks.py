"""Thread stacks as a RocketMQ Java client sends them (UtilAll.jstack, in its running info when
asked with jstackEnable), read for the operator: the consume threads apart from the idle ones and
the framework's, and identical busy frames clustered across the clients of a group.

The text is, per thread, a header line `<name padded to 40>TID: <id> STATE: <state>`, then one
line per frame `<name padded to 40><frame>`, then a blank line. Pure: text in, threads and
clusters out."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

HEADER = re.compile(r"^(?P<name>.*?)\s*TID: (?P<tid>\d+) STATE: (?P<state>\w+)\s*$")
# the push consumer's consume executor (ConsumeMessageConcurrentlyService and the orderly one):
# ThreadFactoryImpl("ConsumeMessageThread_" + group + "_")
CONSUME_THREAD = "ConsumeMessageThread_"
# frames of the platform and of the client library: not where an application is stuck
FRAMEWORK = ("java.", "javax.", "jdk.", "sun.", "com.sun.", "org.apache.rocketmq.", "io.netty.", "io.grpc.")
# an idle pool thread waits for work in the executor's queue
IDLE_FRAMES = ("java.util.concurrent.ThreadPoolExecutor.getTask", "java.util.concurrent.LinkedBlockingQueue.take",
               "java.util.concurrent.LinkedBlockingQueue.poll")  # fmt: skip
MAX_STACK_CHARS = 2_000_000  # a larger text is read up to here, and says so


def code(frame: str) -> str:
    """A frame without its class loader and module (Java 9 and later write "app//com.x.Y.z(Y.java:1)"
    and "java.base/java.util...."): the code's own name, as the application's authors know it."""
    method, paren, rest = frame.partition("(")
    return method.rpartition("/")[2] + paren + rest


@dataclass
class Thread:
    name: str
    tid: int
    state: str
    frames: list[str] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        return any(frame.startswith(IDLE_FRAMES) for frame in self.frames[:8])

    def application_frames(self) -> list[str]:
        """The frames of the application's own code, innermost first."""
        return [f for f in self.frames if not f.startswith(FRAMEWORK)]

    @property
    def where(self) -> str:
        """Where it is, for a reader: its innermost application frame, else its top frame."""
        own = self.application_frames()
        return own[0] if own else (self.frames[0] if self.frames else "?")


def parse(text: str | None) -> tuple[list[Thread], bool]:
    """The threads of one client's stack text, and whether the text was cut at MAX_STACK_CHARS."""
    if not text:
        return [], False
    cut = len(text) > MAX_STACK_CHARS
    threads, current = [], None
    for line in text[:MAX_STACK_CHARS].splitlines():
        if not line.strip():
            current = None
            continue
        header = HEADER.match(line)
        if header and current is None:
            current = Thread(header["name"], int(header["tid"]), header["state"])
            threads.append(current)
        elif current is not None:
            # the frame follows the thread's name, padded to 40 (longer names are not cut)
            current.frames.append(code(line[max(40, len(current.name)) :].strip()))
    return threads, cut


@dataclass
class Cluster:
    """Busy consume threads whose innermost application frames are the same, across clients."""

    frame: str  # the innermost application frame (or the top frame when none is the application's)
    caller: str | None  # the application frame that called it
    threads: int
    clients: list[str]  # the clients whose stacks show them
    state: str  # the commonest thread state among them


@dataclass
class Reading:
    clusters: list[Cluster]
    consume_threads: int  # the group's, in every process read, each counted once
    busy_threads: int
    clients: int  # clients whose stacks were read
    processes: int  # the processes they run in (clients of one JVM send the same threads)
    threads: dict[str, Thread] = field(default_factory=dict)  # "host:thread id" -> the group's consume thread


def consume_prefix(group: str) -> str:
    """The names of a group's consume threads: ThreadFactoryImpl("ConsumeMessageThread_" + the
    group, cut to 100 characters, + "_"), then a number."""
    return f"{CONSUME_THREAD}{group[:100]}_"


def cluster(stacks: dict[str, list[Thread]], group: str) -> Reading:
    """client id -> its threads: the group's busy consume threads grouped by where they are, the
    largest group first. A client's stacks are its whole JVM's: several clients in one process
    (one application consuming with several consumers) send the same threads, so a thread is
    counted once per process (its host and thread id), and only the group's own consume threads
    count (other groups' consumers may share the process)."""
    prefix = consume_prefix(group)
    seen: dict[tuple[str, int], tuple[Thread, set[str]]] = {}
    keys_of: dict[str, frozenset] = {}
    for client, threads in stacks.items():
        host = client.partition("@")[0]
        keys = set()
        for thread in threads:
            if not (thread.name.startswith(prefix) and thread.name[len(prefix) :].isdigit()):
                continue  # another group's (whose name may start with this one's and "_")
            key = (host, thread.tid)
            keys.add(key)
            seen.setdefault(key, (thread, set()))[1].add(client)
        keys_of[client] = frozenset(keys)
    groups: dict[tuple[str, str | None], list[tuple[Thread, set[str]]]] = defaultdict(list)
    busy = 0
    for thread, clients in seen.values():
        if thread.idle:
            continue
        busy += 1
        own = thread.application_frames()
        groups[(thread.where, own[1] if len(own) > 1 else None)].append((thread, clients))
    found = []
    for (frame, caller), members in groups.items():
        states = defaultdict(int)
        for thread, _ in members:
            states[thread.state] += 1
        state = max(sorted(states), key=states.get)
        shown = sorted(set().union(*(clients for _, clients in members)))
        found.append(Cluster(frame, caller, len(members), shown, state))
    found.sort(key=lambda c: (-c.threads, c.frame))
    processes = len({keys for keys in keys_of.values() if keys}) + sum(1 for keys in keys_of.values() if not keys)
    threads = {f"{host}:{tid}": thread for (host, tid), (thread, _) in seen.items()}
    return Reading(found, len(seen), busy, len(stacks), processes, threads)
