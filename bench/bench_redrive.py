"""Unthrottled DLQ redrive of 10,000 messages, against baselines measured in the same run on
the same broker with the same bodies:
- the broker's raw limit: SEND_MESSAGE_V2 frames encoded before the clock starts, written on a
  plain socket with at most PIPELINE (512, the console client's own limit) unanswered, only
  the response code read back; measured before and after the redrive, the better one kept;
- the same with SEND_BATCH_MESSAGE frames of 64 messages (what a redrive to a topic sends; a
  %RETRY% topic takes no batches, so a redrive back to the group compares with the first);
- the console client's own pipelined sends (`actions.send_messages`, encoding included);
- the official Java producer (synchronous sends).
Also timed: the same DLQ redriven back to its group (the %RETRY% topic), and a write-only DLQ
(perm 2) redriven while read by position.

CPUs: with --cpus split (the default on two or more) the name server and broker are bound to
CPU 0 and this process and the Java harness to the others, as on separate hosts. Shared, a
client that does real work (decoding the DLQ, building copies, recording rows) takes CPU the
broker would otherwise use, while the raw baseline takes almost none: the two runs would not
see the same broker.

    python -m bench.bench_redrive [--messages 10000] [--write-only-messages 2000] [--cpus split|shared]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.django_env import setup_django
from consumers.rocketmq import AdminClient
from consumers.rocketmq.codes import DEFAULT_TOPIC, RequestCode, dlq_topic, retry_topic
from consumers.rocketmq.frame import RemotingCommand, encode
from consumers.rocketmq.message import format_properties, split_address
from consumers.rocketmq.models import MessageQueue, Outgoing, TopicConfig
from consumers.rocketmq.ops import sending
from devstack.processes import pin_process_group
from devstack.rocketmq import LocalRocketMQ
from devstack.runtime import ensure_runtime
from devstack.traffic import Harness

GROUP = "bench-redrive"
PIPELINE = 512
WRITE_ONLY = "bench-redrive-old"  # a DLQ made by a broker before 4.9.2 (perm 2): read by position
BODY = b'{"order": 12345, "state": "failed", "note": "a dead letter of about a hundred bytes......"}'


async def fill(namesrv: str, count: int, write_only: int) -> None:
    async with AdminClient(namesrv, request_timeout=30) as client:
        masters = list((await client.topology.cluster_info()).masters().values())
        for topic in ("bench-redrive-target", "bench-raw-target", "bench-java-target", retry_topic(GROUP)):
            await client.actions.create_or_update_topic(TopicConfig(topic, 8, 8), masters)
        await client.actions.create_or_update_topic(TopicConfig(dlq_topic(GROUP), 1, 1), masters[:1])
        await client.actions.create_or_update_topic(TopicConfig(dlq_topic(WRITE_ONLY), 1, 1, perm=2), masters[:1])
        for group, total in ((GROUP, count), (WRITE_ONLY, write_only)):
            for start in range(0, total, 1000):
                await asyncio.gather(*(
                    client.actions.send_message(dlq_topic(group), BODY, keys=[f"k-{i}"],
                                                properties={"RETRY_TOPIC": "orders", "ORIGIN_MESSAGE_ID": f"o-{i}"})
                    for i in range(start, min(total, start + 1000))
                ))  # fmt: skip


async def _broker(namesrv: str, topic: str) -> tuple[str, str]:
    async with AdminClient(namesrv, request_timeout=30) as client:
        route = await client.topology.topic_route(topic)
        return next(iter(sorted(route.master_addrs().items())))


class _RawPipeline(asyncio.Protocol):
    """Writes pre-encoded frames, at most PIPELINE unanswered, and counts the answers by their
    code (read from the JSON header without parsing it)."""

    def __init__(self, frames: list[bytes], done: asyncio.Future):
        self.frames, self.done, self.buffer = frames, done, bytearray()
        self.sent = self.answered = self.ok = 0

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._refill()

    def _refill(self) -> None:
        upto = min(len(self.frames), self.answered + PIPELINE)
        if upto > self.sent:
            self.transport.write(b"".join(self.frames[self.sent : upto]))
            self.sent = upto

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        start = 0
        while len(self.buffer) - start >= 8:
            length = int.from_bytes(self.buffer[start : start + 4], "big")
            if len(self.buffer) - start < 4 + length:
                break
            header_length = int.from_bytes(self.buffer[start + 4 : start + 8], "big") & 0xFFFFFF
            self.ok += b'"code":0,' in self.buffer[start + 8 : start + 8 + header_length]
            self.answered += 1
            start += 4 + length
        del self.buffer[:start]
        if self.answered == len(self.frames) and not self.done.done():
            self.done.set_result(None)
        self._refill()


async def raw_sends(namesrv: str, count: int, *, batched: bool = False) -> float:
    """The broker's limit for these bodies: frames encoded up front, then pipelined."""
    broker, address = await _broker(namesrv, "bench-raw-target")
    if batched:
        messages = [
            sending.Prepared(i, Outgoing("bench-raw-target", BODY, {"KEYS": f"k-{i}"}, unique_key=f"B{i:031X}"),
                             MessageQueue("bench-raw-target", broker, i % 8), address)
            for i in range(count)
        ]  # fmt: skip
        requests, _ = sending.requests(messages, "bench")
        frames = [
            encode(RemotingCommand(code=code, opaque=n + 1, body=body, ext_fields=fields))
            for n, (_, code, fields, body) in enumerate(requests)
        ]
    else:
        frames = [
            encode(RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=i + 1, body=BODY, ext_fields={
                "a": "bench", "b": "bench-raw-target", "c": DEFAULT_TOPIC, "d": "4", "e": str(i % 8), "f": "0",
                "g": str(int(time.time() * 1000)), "h": "0", "i": format_properties({"UNIQ_KEY": f"{i:032X}",
                "KEYS": f"k-{i}", "WAIT": "true"}), "j": "0", "k": "false", "m": "false", "n": broker}))
            for i in range(count)
        ]  # fmt: skip
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    host, port = split_address(address)
    started = time.perf_counter()
    transport, pipeline = await loop.create_connection(lambda: _RawPipeline(frames, done), host, port)
    await done
    elapsed = time.perf_counter() - started
    transport.close()
    assert pipeline.ok == len(frames), f"the broker refused {len(frames) - pipeline.ok} of the raw sends"
    return count / elapsed


async def client_sends(namesrv: str, count: int) -> float:
    """The console client's pipelined sends of the same bodies, encoding included."""
    async with AdminClient(namesrv, request_timeout=30) as client:
        batch = [Outgoing("bench-raw-target", BODY, {"KEYS": f"k-{i}"}, unique_key=f"C{i:031X}") for i in range(count)]
        await client.actions.send_messages(batch[:100])  # route and connection, as the redrive has them
        started = time.perf_counter()
        results = await client.actions.send_messages(batch)
        elapsed = time.perf_counter() - started
    assert not [r for r in results if isinstance(r, Exception)]
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--write-only-messages", type=int, default=2_000)
    cpus = sorted(os.sched_getaffinity(0))
    parser.add_argument("--cpus", choices=("split", "shared"), default="split" if len(cpus) >= 2 else "shared")
    args = parser.parse_args()
    base, redis = setup_django()
    runtime = ensure_runtime()
    local = LocalRocketMQ(runtime, base_dir=Path(tempfile.mkdtemp(prefix="bench-redrive-"))).start()
    harness = Harness(runtime, local.namesrv_addr, base / "harness")
    if args.cpus == "split":
        broker_side, client_side = {cpus[0]}, set(cpus[1:])
        for process in [local.namesrv] + [b.process for b in local.brokers.values()]:
            pin_process_group(process.pid, broker_side)
        pin_process_group(harness.process.pid, client_side)
        os.sched_setaffinity(0, client_side)  # this thread; the session's loop thread inherits it
    try:
        asyncio.run(fill(local.namesrv_addr, args.messages, args.write_only_messages))
        from django.conf import settings

        from consumers.changes.workflow import Actor
        from consumers.dlq import redrive, runner
        from consumers.dlq.browse import Selection
        from consumers.identity import create_or_update_user
        from consumers.models import Cluster

        settings.REDRIVE_APPROVAL_THRESHOLD = 10**9  # the benchmark measures the run, not the approval
        cluster = Cluster.objects.create(name="bench", namesrv_addrs=local.namesrv_addr)
        operator = create_or_update_user("op", "operator", "bench-password-123")

        def redrive_rate(group: str, target: str, count: int) -> float:
            job = redrive.plan_redrive(actor=Actor(operator), cluster=cluster, group=group, selection=Selection(),
                                       target=target, target_topic="bench-redrive-target" if target == "topic" else "",
                                       rate=settings.REDRIVE_MAX_RATE)  # fmt: skip
            started = time.perf_counter()
            done = runner.run_job(job.pk)
            elapsed = time.perf_counter() - started
            assert done.state == "done" and done.moved == count, (done.state, done.moved, done.failures[-3:])
            return count / elapsed

        raw_before = asyncio.run(raw_sends(local.namesrv_addr, args.messages))
        ours = redrive_rate(GROUP, "topic", args.messages)
        raw = max(raw_before, asyncio.run(raw_sends(local.namesrv_addr, args.messages)))
        raw_batched = max(asyncio.run(raw_sends(local.namesrv_addr, args.messages, batched=True)) for _ in range(2))
        to_group = redrive_rate(GROUP, "group", args.messages)
        write_only = redrive_rate(WRITE_ONLY, "topic", args.write_only_messages)
        client = asyncio.run(client_sends(local.namesrv_addr, args.messages))
        started = time.perf_counter()
        harness.produce("bench-java-target", args.messages, timeout=600, quiet=True)
        java = args.messages / (time.perf_counter() - started)
    finally:
        harness.close()
        local.stop()
        redis.stop()
    sides = f"broker on CPU {cpus[0]}, console on the other {len(cpus) - 1}" if args.cpus == "split" else "all share"
    print(f"\nRedrive of {args.messages} messages, unthrottled (messages/s); {len(cpus)} CPUs: {sides}")
    print(f"  ours (read DLQ, send, checkpoint, record)  {ours:9.0f}")
    print(f"  raw limit (pre-encoded, pipelined)         {raw:9.0f}   ours = {ours / raw:.0%} of it (goal >= 50 %)")
    print(f"  raw limit, batches of 64 (pre-encoded)     {raw_batched:9.0f}   ours = {ours / raw_batched:.0%} of it")
    print(f"  console client sends (batches, encoded)    {client:9.0f}   ours = {ours / client:.0%} of it")
    print(f"  Java producer (synchronous sends)          {java:9.0f}   ours = {ours / java:.2f}x")
    print(f"  ours, back to the group (%RETRY% topic)    {to_group:9.0f}   {to_group / raw:.0%} of the raw limit")
    print(f"  ours, write-only DLQ read by position      {write_only:9.0f}   ({args.write_only_messages} messages)")


if __name__ == "__main__":
    main()
