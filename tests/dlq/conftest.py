"""Fixtures shared by the DLQ tests."""

from __future__ import annotations

import json

import pytest

from consumers.models import Cluster
from consumers.rocketmq import AdminClient
from tests.conftest import run
from tests.support.scenarios import dlq_size, wait


@pytest.fixture
def cluster(db, namesrv, redis, history_dir):
    return Cluster.objects.create(name="local", namesrv_addrs=namesrv)


@pytest.fixture
def pacers(monkeypatch) -> list:
    """Every Pacer a run makes, kept for the test to read what each let go (`taken`) and how
    long it held senders back (`held`)."""
    from consumers.dlq import runner

    made = []

    class Kept(runner.Pacer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.taken, self.held, sleep = 0, 0.0, self.sleep

            async def counted(seconds: float) -> None:
                self.held += seconds
                await sleep(seconds)

            self.sleep = counted
            made.append(self)

        async def take(self, count: int) -> None:
            await super().take(count)
            self.taken += count

    monkeypatch.setattr(runner, "Pacer", Kept)
    return made


def send(namesrv, topic: str, body: bytes, key: str, **options) -> str:
    async def one():
        async with AdminClient(namesrv) as client:
            return (await client.actions.send_message(topic, body, keys=[key], **options)).msg_id

    return run(one())


def dead_letters(traffic, mqadmin, names, create_topic, namesrv, count: int = 12):
    """A topic, `count` messages of which every third dies (plus three special bodies sent by
    us), a failing consumer that dead-letters them, and a second group that consumes all."""
    topic, group, other = create_topic(names.topic("dlq")), names.group("dlq"), names.group("other")
    produced = traffic.produce(topic, count, binaryEvery=4, largeEvery=7)
    special = {
        "script": send(namesrv, topic, b"<script>alert(1)</script>", "special-script", tags="html",
                       properties={"note": "übergröße ✓"}),
        "binary": send(namesrv, topic, bytes(range(256)) * 2, "special-binary", tags="bin"),
        "large": send(namesrv, topic, json.dumps({"k": "v" * 6000}).encode(), "special-large", tags="json"),
    }  # fmt: skip
    doomed = {m.msg_id: m for m in produced.sent if m.seq % 3 == 0}
    fail_keys = [m.key for m in doomed.values()] + ["special-script", "special-binary", "special-large"]
    failing = traffic.consume(group, topic, mode="failing", failKeys=fail_keys, maxReconsumeTimes=1)
    everyone = traffic.consume(other, topic)
    expected = len(doomed) + len(special)
    wait(lambda: dlq_size(mqadmin, group) == expected, 90, "the DLQ holds every doomed message")
    everyone.wait_acked(count + len(special))
    return {"topic": topic, "group": group, "other": other, "failing": failing, "everyone": everyone,
            "doomed": doomed, "special": special, "produced": produced, "expected": expected}  # fmt: skip


@pytest.fixture
def dead(traffic, mqadmin, names, create_topic, namesrv):
    return dead_letters(traffic, mqadmin, names, create_topic, namesrv)
