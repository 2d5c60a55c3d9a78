"""Connections and requests against a byte-level fake server: pipelining, server-initiated
requests, malformed frames, timeouts, deadlines, reconnects, backoff, signing, close."""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import hmac
import json
import time

import pytest

from consumers.jobs import collector
from consumers.rocketmq import (
    AdminClient,
    ConnectError,
    ConnectionClosed,
    Credentials,
    DeadlineExceeded,
    GroupNotFound,
    ProtocolError,
    RequestTimeout,
    TopicNotFound,
    deadline,
    extend_deadline,
)
from consumers.rocketmq.codes import ResponseCode
from consumers.rocketmq.remoting import ClientConfig, RemotingClient, remaining_time
from devstack.processes import free_port
from tests.conftest import run
from tests.support.fake_broker import FakeBroker, response_frame
from tests.support.wire import json_frame


def client_for(*addresses: str, **options) -> RemotingClient:
    return RemotingClient(ClientConfig(namesrv_addrs=list(addresses), **options))


def test_responses_are_matched_by_opaque_even_out_of_order():
    async def slow_first(broker, request, writer):
        if request.ext_fields["n"] == "1":
            await asyncio.sleep(0.3)
        writer.write(response_frame(request, ext={"n": request.ext_fields["n"]}))

    async def scenario():
        broker = await FakeBroker(slow_first).start()
        client = client_for(broker.address)
        first = asyncio.ensure_future(client.invoke(broker.address, 10, {"n": "1"}))
        await asyncio.sleep(0.05)
        second = await client.invoke(broker.address, 10, {"n": "2"})
        assert not first.done()  # the second answer came back first
        assert second.ext_fields["n"] == "2" and (await first).ext_fields["n"] == "1"
        assert broker.connections == 1  # both on one connection
        await client.close()
        await broker.stop()

    run(scenario())


def test_server_requests_are_answered_and_the_connection_carries_on():
    async def interleave(broker, request, writer):
        # a two-way server request (say GET_CONSUMER_RUNNING_INFO) and a oneway one, then the answer
        writer.write(json_frame(b'{"code":307,"flag":0,"language":"JAVA","opaque":555,"version":479}'))
        writer.write(json_frame(b'{"code":220,"flag":2,"language":"JAVA","opaque":556,"version":479}'))
        writer.write(response_frame(request, ext={"ok": "yes"}))

    async def scenario():
        broker = await FakeBroker(interleave).start()
        client = client_for(broker.address)
        assert (await client.invoke(broker.address, 10)).ext_fields == {"ok": "yes"}
        assert (await client.invoke(broker.address, 10)).ext_fields == {"ok": "yes"}
        await asyncio.sleep(0.1)
        replies = broker.replies_from_client
        assert [r.opaque for r in replies] == [555, 555]  # the oneway request got no reply
        assert {r.code for r in replies} == {ResponseCode.REQUEST_CODE_NOT_SUPPORTED}
        assert broker.connections == 1
        await client.close()
        await broker.stop()

    run(scenario())


def test_a_malformed_frame_fails_what_is_pending_and_the_next_request_reconnects():
    calls = []

    async def garbage_once(broker, request, writer):
        calls.append(request)
        if len(calls) == 1:
            writer.write(b"\x7f\xff\xff\xff garbage")
        else:
            writer.write(response_frame(request))

    async def scenario():
        broker = await FakeBroker(garbage_once).start()
        client = client_for(broker.address)
        with pytest.raises(ProtocolError, match="malformed frame") as caught:
            await client.invoke(broker.address, 10)
        assert caught.value.address == broker.address
        assert (await client.invoke(broker.address, 10)).code == 0
        assert broker.connections == 2
        await client.close()
        await broker.stop()

    run(scenario())


def test_no_answer_is_a_timeout_and_a_deadline_bounds_a_batch():
    async def never(broker, request, writer):
        return None

    async def scenario():
        broker = await FakeBroker(never).start()
        client = client_for(broker.address, request_timeout=5.0)
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            await client.invoke(broker.address, 10, timeout=0.2)
        assert not isinstance(caught.value, DeadlineExceeded)
        assert 0.15 < time.monotonic() - started < 1.0
        started = time.monotonic()
        with deadline(0.4), pytest.raises(DeadlineExceeded):
            await asyncio.gather(*(client.invoke(broker.address, 10) for _ in range(5)))
        assert time.monotonic() - started < 1.0  # not 5 x 5 s
        await client.close()
        await broker.stop()

    run(scenario())


def test_a_connection_closed_mid_request_is_reported_as_such():
    async def hang_up(broker, request, writer):
        writer.close()

    async def scenario():
        broker = await FakeBroker(hang_up).start()
        client = client_for(broker.address)
        with pytest.raises(ConnectionClosed):
            await client.invoke(broker.address, 10)
        await client.close()
        await broker.stop()

    run(scenario())


def test_refused_connections_back_off_then_recover_when_the_server_is_back():
    async def scenario():
        port = free_port()
        address = f"127.0.0.1:{port}"
        client = client_for(address, backoff_initial=0.3, backoff_max=1.0)
        with pytest.raises(ConnectError, match="cannot connect"):
            await client.invoke(address, 10)
        with pytest.raises(ConnectError, match="not reconnecting"):
            await client.invoke(address, 10)  # fails fast inside the backoff window
        broker = await FakeBroker().start(port)
        await asyncio.sleep(0.35)
        assert (await client.invoke(address, 10)).code == 0
        await client.close()
        await broker.stop()

    run(scenario())


def test_in_flight_requests_are_bounded():
    async def slow(broker, request, writer):
        await asyncio.sleep(0.05)
        writer.write(response_frame(request))

    async def scenario():
        broker = await FakeBroker(slow).start()
        client = client_for(broker.address, max_in_flight=3)
        await asyncio.gather(*(client.invoke(broker.address, 10) for _ in range(20)))
        assert broker.max_in_flight == 3
        await client.close()
        await broker.stop()

    run(scenario())


def test_batches_keep_at_most_max_in_flight_requests_outstanding_and_report_each_outcome():
    async def slow_or_refusing(broker, request, writer):
        await asyncio.sleep(0.02)
        code = 17 if request.ext_fields["n"] == "13" else 0
        writer.write(response_frame(request, code=code, ext={"n": request.ext_fields["n"]}))

    async def scenario():
        broker = await FakeBroker(slow_or_refusing).start()
        down = f"127.0.0.1:{free_port()}"
        client = client_for(broker.address, max_in_flight=5)
        requests = [(broker.address, 208, {"n": str(i)}) for i in range(40)] + [(down, 208, {"n": "x"})]
        answers = await client.invoke_many(requests)
        assert broker.max_in_flight == 5
        assert [a.ext_fields["n"] for a in answers[:40]] == [str(i) for i in range(40)]  # in order
        assert answers[13].code == 17  # a refusal is an answer; the caller types it
        assert isinstance(answers[40], ConnectError) and answers[40].address == down
        await client.close()
        await broker.stop()

    run(scenario())


def test_a_batchs_answers_are_freed_when_the_caller_lets_them_go_without_the_garbage_collector():
    # a poll holds the collector off (consumers/jobs/collector.py): answers kept alive by a
    # reference cycle would stay until the poll's end (at 50,000 groups, 64 MiB more a process)
    async def answer(broker, request, writer):
        writer.write(response_frame(request, code=0, ext={"n": request.ext_fields["n"]}))

    async def scenario():
        broker = await FakeBroker(answer).start()
        client = client_for(broker.address, max_in_flight=3)
        answers = await client.invoke_many([(broker.address, 208, {"n": str(i)}) for i in range(10)])
        held = list(answers)
        assert [a.ext_fields["n"] for a in held] == [str(i) for i in range(10)]
        del answers
        # what else still holds them: the batch's list of results, if anything kept it
        others = [r for a in held for r in gc.get_referrers(a) if r is not held]
        await client.close()
        await broker.stop()
        return others

    with collector.held_off():
        assert run(scenario()) == []


def test_batches_and_single_requests_share_the_limit_without_stalling():
    """Two batches at once with single requests among them: a batch that finds every place
    taken waits for one (it used to wait forever), and places a batch no longer needs go to
    the single requests waiting for them."""

    async def slow(broker, request, writer):
        await asyncio.sleep(0.01)
        writer.write(response_frame(request, ext={"n": request.ext_fields["n"]}, body=request.body))

    async def scenario():
        broker = await FakeBroker(slow).start()
        client = client_for(broker.address, max_in_flight=4)
        first = [(broker.address, 310, {"n": f"a{i}"}, f"body a{i}".encode()) for i in range(30)]
        second = [(broker.address, 310, {"n": f"b{i}"}) for i in range(30)]
        singles = [client.invoke(broker.address, 10, {"n": f"s{i}"}) for i in range(10)]
        answers = await asyncio.wait_for(
            asyncio.gather(client.invoke_many(first), client.invoke_many(second), *singles), 10
        )
        a, b, *s = answers
        assert [x.ext_fields["n"] for x in a] == [f"a{i}" for i in range(30)]
        assert [x.body for x in a] == [f"body a{i}".encode() for i in range(30)]  # bodies went out
        assert [x.ext_fields["n"] for x in b] == [f"b{i}" for i in range(30)]
        assert [x.ext_fields["n"] for x in s] == [f"s{i}" for i in range(10)]
        assert broker.max_in_flight == 4
        await client.close()
        await broker.stop()

    run(scenario())


def test_a_batch_cut_off_mid_way_reports_each_request_and_gives_back_its_places():
    """Answers, a hang-up, timeouts: each request of the batch gets its own outcome, and every
    place it held is free again afterwards (a leaked place would stall later requests)."""

    async def answer_then_hang_up(broker, request, writer):
        n = int(request.ext_fields["n"])
        if n < 10:
            writer.write(response_frame(request, ext={"n": str(n)}))
        elif n == 10:
            writer.close()

    async def answer_all(broker, request, writer):
        writer.write(response_frame(request))

    async def scenario():
        broker = await FakeBroker(answer_then_hang_up).start()
        client = client_for(broker.address, max_in_flight=4, request_timeout=0.3)
        answers = await asyncio.wait_for(
            client.invoke_many([(broker.address, 10, {"n": str(i)}) for i in range(30)]), 10
        )
        assert [a.ext_fields["n"] for a in answers[:10]] == [str(i) for i in range(10)]
        # what was in flight at the hang-up is closed; what came after found it closed or timed out
        assert all(isinstance(a, (ConnectionClosed, ConnectError, RequestTimeout)) for a in answers[10:])
        assert any(isinstance(a, ConnectionClosed) for a in answers[10:])
        assert client._in_flight == 0
        broker.handler = answer_all  # answers again
        more = await asyncio.wait_for(client.invoke_many([(broker.address, 10, {"n": "0"})] * 8), 10)
        assert [a.code for a in more] == [0] * 8
        await client.close()
        await broker.stop()

    run(scenario())


def test_requests_are_signed_when_credentials_are_given():
    async def scenario():
        broker = await FakeBroker().start()
        client = client_for(broker.address, credentials=Credentials("rocketmq2", "12345678"))
        await client.invoke(broker.address, 105, {"topic": "TopicTest"}, b"body")
        fields = broker.requests[0].ext_fields
        # computed here from the scheme: values sorted by key (AccessKey < topic), then the body
        expected = base64.b64encode(hmac.new(b"12345678", b"rocketmq2TopicTestbody", hashlib.sha1).digest()).decode()
        assert fields["AccessKey"] == "rocketmq2" and fields["Signature"] == expected
        await client.close()
        await broker.stop()

    run(scenario())


def test_oneway_requests_go_out_flagged_and_wait_for_nothing():
    async def never(broker, request, writer):
        return None

    async def scenario():
        broker = await FakeBroker(never).start()
        client = client_for(broker.address)
        await client.oneway(broker.address, 15, {"consumerGroup": "g", "commitOffset": "7"})
        for _ in range(50):
            if broker.requests:
                break
            await asyncio.sleep(0.01)
        [request] = broker.requests
        assert request.is_oneway and request.ext_fields == {"consumerGroup": "g", "commitOffset": "7"}
        await client.close()
        await broker.stop()

    run(scenario())


def test_credentials_never_show_their_secret():
    assert "12345678" not in repr(Credentials("ak", "12345678"))


@pytest.mark.parametrize(
    ("code", "error"),
    [(ResponseCode.TOPIC_NOT_EXIST, TopicNotFound), (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, GroupNotFound)],
)
def test_refused_codes_become_typed_errors_with_remark_and_address(code, error):
    async def refuse(broker, request, writer):
        writer.write(response_frame(request, code=code, remark="the broker's own words"))

    async def scenario():
        broker = await FakeBroker(refuse).start()
        client = client_for(broker.address)
        with pytest.raises(error) as caught:
            await client.call(broker.address, 208, {"consumerGroup": "g"})
        assert caught.value.remark == "the broker's own words" and caught.value.address == broker.address
        assert "GET_CONSUME_STATS" in str(caught.value)
        await client.close()
        await broker.stop()

    run(scenario())


def test_the_next_name_server_is_tried_when_one_is_down():
    async def scenario():
        broker = await FakeBroker().start()
        down = f"127.0.0.1:{free_port()}"
        client = client_for(down, broker.address)
        assert (await client.call_namesrv(106)).code == 0
        await client.close()
        with pytest.raises(ConnectError, match="no name server answered"):
            await client_for(down).call_namesrv(106)
        await broker.stop()

    run(scenario())


def test_closing_fails_pending_requests_and_refuses_new_ones():
    async def never(broker, request, writer):
        return None

    async def scenario():
        broker = await FakeBroker(never).start()
        client = client_for(broker.address)
        pending = asyncio.ensure_future(client.invoke(broker.address, 10))
        await asyncio.sleep(0.05)
        await client.close()
        with pytest.raises(ConnectionClosed):
            await pending
        with pytest.raises(ConnectError, match="closed"):
            await client.invoke(broker.address, 10)
        await broker.stop()

    run(scenario())


def test_concurrent_askers_of_one_route_share_one_name_server_request():
    """A thousand sends started at once on a cold cache ask for the target's route once; a
    caller that wants a fresh answer (max_age=0) still gets its own request."""
    route = json.dumps({
        "queueDatas": [{"brokerName": "b", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}],
        "brokerDatas": [{"cluster": "c", "brokerName": "b", "brokerAddrs": {"0": "127.0.0.1:1"}}],
    }).encode()  # fmt: skip

    async def slow_route(broker, request, writer):
        await asyncio.sleep(0.1)
        if request.ext_fields["topic"] == "missing":
            writer.write(response_frame(request, code=ResponseCode.TOPIC_NOT_EXIST, remark="no route"))
        else:
            writer.write(response_frame(request, body=route))

    async def scenario():
        namesrv = await FakeBroker(slow_route).start()
        client = AdminClient(namesrv.address)
        routes = await asyncio.gather(*(client.topology.topic_route("T") for _ in range(200)))
        assert len(namesrv.requests) == 1 and all(r is routes[0] for r in routes)
        assert routes[0].master_addrs() == {"b": "127.0.0.1:1"}
        missing = await asyncio.gather(*(client.topology.topic_route("missing") for _ in range(50)),
                                       return_exceptions=True)  # fmt: skip
        assert len(namesrv.requests) == 2 and all(isinstance(m, TopicNotFound) for m in missing)
        await asyncio.gather(*(client.topology.topic_route("T", max_age=0) for _ in range(3)))
        assert len(namesrv.requests) == 5
        await client.close()
        await namesrv.stop()

    run(scenario())


def test_a_deadline_is_extended_only_later_and_only_inside_its_block():
    extend_deadline(time.monotonic() + 60)  # outside any block: nothing to extend
    assert remaining_time() is None
    with deadline(1.0):
        extend_deadline(time.monotonic())  # earlier: kept as it was
        assert 0.9 < remaining_time() <= 1.0
        extend_deadline(time.monotonic() + 30)
        assert 29 < remaining_time() <= 30
    assert remaining_time() is None
