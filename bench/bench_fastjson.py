"""Body parsing: a 1,000-queue ConsumeStats body in fastjson form (MessageQueue objects as map
keys) parsed by consumers.rocketmq.fastjson, against json.loads on the same data written as
standard JSON (the map as a list of [key, value] pairs), in the same run.

    python -m bench.bench_fastjson [--queues 1000]
"""

from __future__ import annotations

import argparse
import json
import time

from consumers.rocketmq.fastjson import loads
from consumers.rocketmq.models import ConsumeStats


def bodies(queues: int) -> tuple[bytes, bytes]:
    keys = [
        {"brokerName": f"broker-{'ab'[i % 2]}", "queueId": i % 16, "topic": f"topic-{i // 16:04d}"}
        for i in range(queues)
    ]
    values = [
        {
            "brokerOffset": 1_000_000 + i,
            "consumerOffset": 990_000 + i,
            "lastTimestamp": 1_700_000_000_123 + i,
            "pullOffset": 995_000 + i,
        }
        for i in range(queues)
    ]
    entries = ",".join(
        json.dumps(k, separators=(",", ":")) + ":" + json.dumps(v, separators=(",", ":"))
        for k, v in zip(keys, values, strict=True)
    )
    fastjson = '{"consumeTps":12.5,"offsetTable":{' + entries + "}}"
    standard = json.dumps(
        {"consumeTps": 12.5, "offsetTable": [[k, v] for k, v in zip(keys, values, strict=True)]}, separators=(",", ":")
    )
    return fastjson.encode(), standard.encode()


def best_of(function, repeat: int = 7, number: int = 20) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            function()
        timings.append((time.perf_counter() - started) / number)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=1000)
    args = parser.parse_args()
    fastjson, standard = bodies(args.queues)
    ours = loads(fastjson)["offsetTable"]
    theirs = json.loads(standard)["offsetTable"]
    assert list(ours) == [tuple(pair) for pair in theirs]  # the same data, parsed the same
    ours_seconds = best_of(lambda: loads(fastjson))
    json_seconds = best_of(lambda: json.loads(standard))
    typed_seconds = best_of(lambda: ConsumeStats.from_wire(loads(fastjson)))
    print(f"ConsumeStats body with {args.queues} queues: fastjson form {len(fastjson):,} bytes,", end=" ")
    print(f"standard {len(standard):,} bytes")
    print(f"  json.loads, standard JSON        {json_seconds * 1000:8.3f} ms")
    print(f"  fastjson.loads, fastjson form    {ours_seconds * 1000:8.3f} ms")
    print(f"  ... and typed ConsumeStats       {typed_seconds * 1000:8.3f} ms")
    print(f"ratio fastjson.loads / json.loads = {ours_seconds / json_seconds:.2f}x   (target: at most 3x)")
    # a broker's offset table (GET_ALL_CONSUMER_OFFSET): per "topic@group", a map with int keys
    # json cannot read; the cost must grow with the entries, not with their square
    print("\nOffset-table dump (int-keyed maps), against json.loads of the same data with string keys:")
    for groups in (5_000, 20_000):
        dump = "{" + ",".join(f'"T@g-{i:05d}":{{0:5,1:6,2:7,3:8}}' for i in range(groups)) + "}"
        plain = "{" + ",".join(f'"T@g-{i:05d}":{{"0":5,"1":6,"2":7,"3":8}}' for i in range(groups)) + "}"
        dump_seconds = best_of(lambda d=dump: loads(d), repeat=3, number=1)
        plain_seconds = best_of(lambda p=plain: json.loads(p), repeat=3, number=1)
        print(f"  {groups:>6,} entries: {dump_seconds * 1000:8.1f} ms vs {plain_seconds * 1000:6.1f} ms "
              f"({dump_seconds / plain_seconds:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
