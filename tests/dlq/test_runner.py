"""The redrive's send step with the broker replaced by stubs (fault injection): a broker in flow
control (SYSTEM_BUSY: refused before it was stored) is waited for and sent to again; other
refusals are failures with their reason; nothing is sent twice. The real broker is in
test_redrive_on_broker.py and test_worker_killed.py."""

from __future__ import annotations

from types import SimpleNamespace

from consumers.dlq import runner
from consumers.dlq.browse import DlqQueue, Selection
from consumers.dlq.models import RedriveJob
from consumers.rocketmq import BrokerBusy, NoPermission
from consumers.rocketmq.codes import ResponseCode
from consumers.rocketmq.message import Message
from tests.conftest import run


def dead(offset: int) -> Message:
    return Message(topic="%DLQ%g", queue_id=0, queue_offset=offset, physical_offset=1000 + offset, sys_flag=0, flag=0,
                   born_timestamp=0, born_host="127.0.0.1:1", store_timestamp=offset, store_host="127.0.0.1:2",
                   reconsume_times=16, prepared_transaction_offset=0, body_crc=0, stored_body=b"",
                   body=f"dead {offset}".encode(),
                   properties={"UNIQ_KEY": f"U{offset}", "RETRY_TOPIC": "T"})  # fmt: skip


class Reader:
    def __init__(self):
        self.messages = self

    async def pull_range(self, mq, begin, end):
        return [dead(offset) for offset in range(begin, end)]


class Broker:
    """Answers each batch as told by `answer(offset, attempt)`: None stores, an error refuses."""

    def __init__(self, answer):
        self.answer, self.attempts, self.stored, self.actions = answer, {}, [], self

    async def send_messages(self, batch):
        results = []
        for copy in batch:
            offset = int(copy.properties["REDRIVE_SOURCE"].rsplit(":", 1)[1])
            attempt = self.attempts[offset] = self.attempts.get(offset, -1) + 1
            error = self.answer(offset, attempt)
            if error is None:
                self.stored.append(offset)
            results.append(error or SimpleNamespace(msg_id=copy.unique_key))
        return results


def send(broker: Broker, count: int, monkeypatch) -> dict:
    monkeypatch.setattr(runner, "BUSY_BACKOFF", 0.001)
    job = RedriveJob(pk=7, group="g", selection=Selection().to_wire(), target="topic", target_topic="T-out", rate=20000)
    queue = DlqQueue("broker-a", 0, 0, count, True)
    return run(runner._send_window(broker, Reader(), job, queue, set(), check_target=False, pacer=runner.Pacer(20000)))


def test_busy_sends_are_sent_again_until_stored_and_counted_once(monkeypatch):
    busy = BrokerBusy(ResponseCode.SYSTEM_BUSY, "[TIMEOUT_CLEAN_QUEUE]broker busy")
    broker = Broker(lambda offset, attempt: busy if offset % 3 == 0 and attempt < 2 else None)
    outcome = send(broker, 30, monkeypatch)
    assert sorted(broker.stored) == list(range(30))  # every message stored once
    assert sorted(s["source_offset"] for s in outcome["sent"]) == list(range(30)) and outcome["failures"] == []
    assert {o: a for o, a in broker.attempts.items() if a} == {o: 2 for o in range(0, 30, 3)}


def test_a_broker_busy_past_the_retries_and_other_refusals_are_failures_with_reasons(monkeypatch):
    def answer(offset, attempt):
        if offset == 4:
            return BrokerBusy(ResponseCode.SYSTEM_BUSY, "still busy")
        if offset == 5:
            return NoPermission(ResponseCode.NO_PERMISSION, "the topic is not writable")
        return None

    broker = Broker(answer)
    outcome = send(broker, 8, monkeypatch)
    assert sorted(broker.stored) == [0, 1, 2, 3, 6, 7]
    assert broker.attempts[4] == runner.BUSY_RETRIES and broker.attempts[5] == 0  # only busy is tried again
    reasons = {f["offset"]: f["error"] for f in outcome["failures"]}
    assert reasons.keys() == {4, 5} and "still busy" in reasons[4] and "not writable" in reasons[5]
