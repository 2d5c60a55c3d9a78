"""Body parsing: a 1,000-queue ConsumeStats body in fastjson form (MessageQueue objects as map
keys) parsed by consumers.rocketmq.fastjson, against json.loads on the same data written as
standard JSON (the map as a list of [key, value] pairs), in the same run.

    python -m bench.bench_fastjson [--queues 1000] [--entries 20000,200000]

and the broker's offset-table dump (GET_ALL_CONSUMER_OFFSET, int-keyed maps) against json.loads of
the same data as standard JSON.
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
    parser.add_argument("--entries", type=lambda v: [int(n) for n in v.split(",")], default=[20_000, 200_000],
                        help="offset-table dump sizes, comma-separated")  # fmt: skip
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
    # json cannot read. The same data as standard JSON has the queue ids quoted.
    print("\nOffset-table dump (per topic@group entry a map queue id -> offset; 8 queues, or 1 for a retry topic),")
    print("against json.loads of the same data as standard JSON:")
    for entries in args.entries:
        dump, plain = offset_dumps(entries)
        assert loads(dump) == json.loads(plain, object_hook=_int_keys) and len(loads(dump)["offsetTable"]) == entries
        assert loads(dump, numeric_keys=False) == json.loads(plain)
        repeat, number = (5, 3) if entries <= 20_000 else (3, 1)
        plain_seconds = best_of(lambda p=plain: json.loads(p), repeat, number)
        for label, function in (
            ("int keys", lambda d=dump: loads(d)),
            ("keys as written", lambda d=dump: loads(d, numeric_keys=False)),
        ):
            seconds = best_of(function, repeat, number)
            print(f"  {entries:>7,} entries ({len(dump) / 1e6:5.1f} MB), {label:<15} {seconds * 1000:8.1f} ms vs "
                  f"{plain_seconds * 1000:7.1f} ms: {seconds / plain_seconds:.2f}x (target: at most 3x)")  # fmt: skip


def offset_dumps(entries: int) -> tuple[str, str]:
    """A dump of `entries` topic@group keys as the broker writes it, and as standard JSON."""
    tables = []
    for i in range(entries):
        group = f"GID_service_{i // 2:06d}"
        if i % 2:
            tables.append((f"%RETRY%{group}@{group}", {0: 12 + i % 5}))
        else:
            tables.append((f"orders-{i % 900:03d}@{group}", {q: 1_000_000 + i * 8 + q for q in range(8)}))
    data = ",".join(
        json.dumps(key) + ":{" + ",".join(f"{q}:{offset}" for q, offset in table.items()) + "}" for key, table in tables
    )
    dump = '{"offsetTable":{' + data + '},"dataVersion":{"counter":4211,"stateVersion":0,"timestamp":1764000000000}}'
    plain = json.dumps(
        {
            "offsetTable": {key: table for key, table in tables},
            "dataVersion": {"counter": 4211, "stateVersion": 0, "timestamp": 1764000000000},
        },
        separators=(",", ":"),
    )
    return dump, plain


def _int_keys(obj: dict) -> dict:
    return {int(k) if k.isdigit() else k: v for k, v in obj.items()}


if __name__ == "__main__":
    main()
