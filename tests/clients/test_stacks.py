"""Stacks as the Java client writes them (UtilAll.jstack's format, written here by hand), read
and clustered."""

from __future__ import annotations

from consumers.clients.stacks import MAX_STACK_CHARS, cluster, parse


def jstack(*threads: tuple[str, int, str, list[str]]) -> str:
    """UtilAll.jstack: "%-40sTID: %d STATE: %s%n", then "%-40s%s%n" per frame, then a blank line."""
    text = ""
    for name, tid, state, frames in threads:
        text += f"{name:<40}TID: {tid} STATE: {state}\n"
        text += "".join(f"{name:<40}{frame}\n" for frame in frames)
        text += "\n"
    return text


BLOCKED = [
    "java.base/jdk.internal.misc.Unsafe.park(Native Method)",
    "java.base/java.util.concurrent.locks.LockSupport.park(LockSupport.java:211)",
    "java.base/java.util.concurrent.CountDownLatch.await(CountDownLatch.java:230)",
    "app//com.example.Inventory.reserve(Inventory.java:42)",
    "app//com.example.OrderListener.consumeMessage(OrderListener.java:17)",
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run(ConsumeMessageConcurrentlyService.java:411)",
]
IDLE = [
    "java.base/jdk.internal.misc.Unsafe.park(Native Method)",
    "java.base/java.util.concurrent.locks.LockSupport.park(LockSupport.java:341)",
    "java.base/java.util.concurrent.LinkedBlockingQueue.take(LinkedBlockingQueue.java:435)",
    "java.base/java.util.concurrent.ThreadPoolExecutor.getTask(ThreadPoolExecutor.java:1062)",
]
LONG_NAME = "ConsumeMessageThread_a-group-with-a-rather-long-name_3"


def test_threads_are_read_with_their_state_and_frames_even_with_names_over_40_characters():
    text = jstack(
        ("main", 1, "RUNNABLE", ["java.lang.Thread.sleep(Native Method)"]), (LONG_NAME, 77, "WAITING", BLOCKED)
    )
    (main, consume), cut = parse(text)
    assert (main.name, main.tid, main.state, main.frames) == (
        "main",
        1,
        "RUNNABLE",
        ["java.lang.Thread.sleep(Native Method)"],
    )
    assert (consume.name, consume.tid, consume.state) == (LONG_NAME, 77, "WAITING")
    # frames as their code is named: without the class loader and module Java 9 and later print
    assert consume.frames[2:5] == [
        "java.util.concurrent.CountDownLatch.await(CountDownLatch.java:230)",
        "com.example.Inventory.reserve(Inventory.java:42)",
        "com.example.OrderListener.consumeMessage(OrderListener.java:17)",
    ]
    assert not consume.idle and not cut
    assert consume.application_frames()[:2] == consume.frames[3:5]


def test_busy_consume_threads_in_one_place_are_counted_across_clients():
    one = jstack(
        ("ConsumeMessageThread_G_1", 20, "WAITING", BLOCKED),
        ("ConsumeMessageThread_G_2", 21, "WAITING", IDLE),
        ("NettyClientSelector_1", 9, "RUNNABLE", ["sun.nio.ch.EPoll.wait(Native Method)"]),
    )
    two = jstack(
        ("ConsumeMessageThread_G_1", 30, "WAITING", BLOCKED), ("ConsumeMessageThread_G_2", 31, "WAITING", BLOCKED)
    )
    three = jstack(("ConsumeMessageThread_G_1", 40, "RUNNABLE", ["com.example.Other.work(Other.java:5)"]))
    reading = cluster({"10.0.0.1@c1": parse(one)[0], "10.0.0.2@c2": parse(two)[0], "10.0.0.3@c3": parse(three)[0]}, "G")
    assert (reading.consume_threads, reading.busy_threads, reading.clients, reading.processes) == (5, 4, 3, 3)
    first, second = reading.clusters
    assert (first.frame, first.caller, first.threads, first.clients, first.state) == (
        "com.example.Inventory.reserve(Inventory.java:42)",
        "com.example.OrderListener.consumeMessage(OrderListener.java:17)",
        3,
        ["10.0.0.1@c1", "10.0.0.2@c2"],
        "WAITING",
    )
    assert (second.frame, second.caller, second.threads, second.clients) == (
        "com.example.Other.work(Other.java:5)",
        None,
        1,
        ["10.0.0.3@c3"],
    )


def test_clients_of_one_process_count_its_threads_once_and_other_groups_threads_not_at_all():
    # one JVM running three consumers of G (each pool numbers its threads from 1) and one of G_x
    shared = jstack(
        ("ConsumeMessageThread_G_1", 20, "WAITING", BLOCKED),
        ("ConsumeMessageThread_G_1", 21, "WAITING", BLOCKED),
        ("ConsumeMessageThread_G_2", 22, "WAITING", IDLE),
        ("ConsumeMessageThread_G_x_1", 23, "WAITING", BLOCKED),
        ("ConsumeMessageScheduledThread_G_1", 24, "TIMED_WAITING", IDLE),
    )
    threads = parse(shared)[0]
    reading = cluster({"10.0.0.1@a": threads, "10.0.0.1@b": threads, "10.0.0.1@c": threads}, "G")
    assert (reading.consume_threads, reading.busy_threads, reading.clients, reading.processes) == (3, 2, 3, 1)
    (only,) = reading.clusters
    assert (only.threads, only.clients) == (2, ["10.0.0.1@a", "10.0.0.1@b", "10.0.0.1@c"])


def test_no_stacks_and_a_huge_text():
    assert parse(None) == ([], False) and parse("") == ([], False)
    threads, cut = parse(
        jstack(*((f"t{i}", i, "RUNNABLE", ["x.Y.z(Y.java:1)"] * 100) for i in range(MAX_STACK_CHARS // 4000 + 50)))
    )
    assert cut and len(threads) < MAX_STACK_CHARS // 4000 + 50
