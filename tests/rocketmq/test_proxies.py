"""Reading gRPC clients from proxies (consumers/rocketmq/proxies.py) against fake proxies:
merged across proxies, 206 as "none here", a dead proxy as unknown, never as offline."""

from __future__ import annotations

import asyncio
import json

from consumers.rocketmq import AdminClient
from consumers.rocketmq.proxies import PROBE_GROUP, read_proxies
from tests.support.fake_broker import FakeBroker, response_frame

CONNECTION_LIST = 203


def proxy(clients: dict[str, list[str]], consume_type: str = "CONSUME_ACTIVELY") -> FakeBroker:
    """A fake proxy knowing `clients` per group; 206 for any other group."""

    async def handle(broker, request, writer):
        group = request.ext_fields.get("consumerGroup")
        if request.code != CONNECTION_LIST or group not in clients:
            writer.write(response_frame(request, code=206, remark=f"the consumer group[{group}] not online"))
            return
        body = {
            "connectionSet": [{"clientId": c, "clientAddr": "127.0.0.1:40000", "language": "JAVA", "version": 479}
                              for c in clients[group]],
            "subscriptionTable": {}, "consumeType": consume_type, "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
        }  # fmt: skip
        writer.write(response_frame(request, body=json.dumps(body).encode()))

    return FakeBroker(handle)


def test_clients_are_merged_across_proxies_and_a_dead_proxy_leaves_groups_unknown():
    asked = {}

    async def scenario():
        first = await proxy({"g-simple": ["c1", "c2"], "g-both": ["c3"]}).start()
        asked[first.address] = first.requests
        second = await proxy({"g-both": ["c3", "c4"]}).start()
        dead = await FakeBroker().start()
        dead_address = dead.address
        await dead.stop()  # nothing listens there any more
        try:
            async with AdminClient("127.0.0.1:1", request_timeout=1.0) as client:
                return await read_proxies(
                    client, ["g-simple", "g-both", "g-none"], [first.address, second.address, dead_address],
                    proxy_deadline=2.0,
                ), first.address, second.address, dead_address  # fmt: skip
        finally:
            await first.stop()
            await second.stop()

    (statuses, found), first, second, dead_address = asyncio.run(scenario())
    requests = asked[first]
    assert [c.client_id for c in found["g-simple"][0].connections] == ["c1", "c2"]
    assert [c.client_id for c in found["g-both"][0].connections] == ["c3", "c4"]  # c3 synced to both: once
    assert found["g-both"][0].consume_type == "CONSUME_ACTIVELY"
    connection, errors = found["g-none"]
    assert connection is None and set(errors) == {dead_address}  # unknown: its clients may be there
    assert statuses[first].error is None and statuses[first].groups == 2
    assert statuses[second].groups == 1
    assert statuses[dead_address].error and statuses[dead_address].groups == 0
    # every proxy is probed, also when no group needs it
    assert sorted(r.ext_fields["consumerGroup"] for r in requests) == sorted(
        [PROBE_GROUP, "g-simple", "g-both", "g-none"]
    )


def test_no_proxy_knowing_a_group_is_offline_not_unknown():
    async def scenario():
        only = await proxy({}).start()
        try:
            async with AdminClient("127.0.0.1:1", request_timeout=1.0) as client:
                return await read_proxies(client, ["g-classic"], [only.address])
        finally:
            await only.stop()

    statuses, found = asyncio.run(scenario())
    assert found["g-classic"] == (None, {})
    assert [s.error for s in statuses.values()] == [None]


def test_a_budget_asks_known_proxy_groups_every_time_and_rotates_through_the_others():
    from consumers.rocketmq.proxies import ProxyAsk

    offline = [f"g{i}" for i in range(10)]
    ask = ProxyAsk(["p"], known=frozenset({"g7"}), budget=4, cursor=0)
    assert ask.select(offline) == ["g7", "g0", "g1", "g2"] and ask.next_cursor == 3
    seen = set()
    for _ in range(3):  # 9 others, 3 a poll: every one within three polls, g7 in every one
        ask = ProxyAsk(["p"], known=frozenset({"g7"}), budget=4, cursor=ask.next_cursor)
        picked = ask.select(offline)
        assert picked[0] == "g7" and len(picked) == 4
        seen |= set(picked[1:])
    assert seen == set(offline) - {"g7"}
    assert ProxyAsk(["p"], budget=20).select(offline) == offline  # within the budget: all of them
