"""Captures of a group's stacks kept in Redis: the newest first, at most CLIENT_STACKS_KEEP,
none older than the retention, and two compared: what did not move."""

from __future__ import annotations

from consumers.clients import services
from consumers.clients.stacks import cluster, parse
from consumers.models import Cluster
from tests.clients.test_stacks import BLOCKED, IDLE, jstack


def reading(frames_of_thread_21: list[str]):
    text = jstack(("ConsumeMessageThread_G_1", 20, "WAITING", BLOCKED), ("ConsumeMessageThread_G_2", 21, "RUNNABLE",
                  frames_of_thread_21), ("ConsumeMessageThread_G_3", 22, "WAITING", IDLE))  # fmt: skip
    return cluster({"10.0.0.1@a": parse(text)[0]}, "G")


def test_captures_are_kept_newest_first_within_their_number_and_age(db, redis, settings):
    settings.CLIENT_STACKS_KEEP, settings.CLIENT_STACKS_RETENTION_SECONDS = 3, 100
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    for at in (1000, 1010, 1020, 1030):
        found = reading(["com.example.Work.step(Work.java:1)"])
        services.keep_capture(redis, east, "G", at=at, by="operator", reading=found, threads=found.threads)
    assert [c["at"] for c in services.captures(redis, east, "G", now=1040)] == [1030, 1020, 1010]
    assert [c["at"] for c in services.captures(redis, east, "G", now=1115)] == [1030, 1020]  # 1010 is 105 s old
    newest = services.captures(redis, east, "G", now=1040)[0]
    assert (newest["by"], newest["busy"], newest["consume_threads"]) == ("operator", 2, 3)
    assert sorted(newest["threads"]) == ["10.0.0.1:20", "10.0.0.1:21"]  # the idle thread is not kept
    assert services.captures(redis, east, "other", now=1040) == []


def test_two_captures_name_the_threads_that_did_not_move(db, redis):
    east = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    older, newer = reading(["com.example.Work.step(Work.java:1)"]), reading(["com.example.Work.step(Work.java:2)"])
    services.keep_capture(redis, east, "G", at=1000, by="a", reading=older, threads=older.threads)
    services.keep_capture(redis, east, "G", at=1010, by="a", reading=newer, threads=newer.threads)
    second, first = services.captures(redis, east, "G", now=1020)
    where = "com.example.Inventory.reserve(Inventory.java:42)"
    assert services.stuck(second, first) == [
        {"thread": "10.0.0.1:20", "name": "ConsumeMessageThread_G_1", "frame": where, "state": "WAITING"}
    ]
