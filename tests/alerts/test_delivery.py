"""Sending notifications to local receivers: the signed webhook, Slack, e-mail over SMTP;
a receiver that is down gets one delivery after it is back, every attempt logged; a delivery
claimed by two workers is sent once."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import threading

import pytest
from django.db import close_old_connections
from django.utils import timezone

from consumers.alerts import delivery
from consumers.alerts.models import Alert, Delivery
from tests.alerts.conftest import make_channel, make_rule
from tests.support.published import group, publish
from tests.support.receivers import HttpReceiver, SmtpReceiver


@pytest.fixture
def receiver():
    http = HttpReceiver()
    yield http
    http.stop()


def fire(east, redis, *channels):
    make_rule(*channels)
    publish(east, redis, [group("orders", lag=8, online=False)])
    return Alert.objects.get()


def test_the_webhook_is_signed_and_carries_the_evidence(east, redis, queued, receiver, settings):
    settings.CONSOLE_BASE_URL = "https://console.example"
    alert = fire(east, redis, make_channel(url=receiver.url, secret="s3cret"))
    assert delivery.deliver(queued[0]) == "sent"
    [request] = receiver.requests
    body = request["body"]
    expected = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert request["headers"]["X-Console-Signature"] == f"sha256={expected}"
    assert request["headers"]["X-Console-Event"] == "firing"
    message = json.loads(body)
    assert message["delivery"] == queued[0] and message["schema"] == "rocketmq-console.alert/1"
    assert message["alert"]["evidence"] == alert.evidence and message["alert"]["subject"] == "orders"
    assert message["alert"]["url"] == "https://console.example/groups/east/orders/"
    sent = Delivery.objects.get()
    assert sent.state == "sent" and [a["result"] for a in sent.attempts] == ["HTTP 200"]


def test_a_receiver_that_is_down_gets_one_delivery_once_back(east, redis, queued, receiver, settings):
    settings.ALERT_RETRY_BASE_SECONDS = 5
    receiver.stop()
    fire(east, redis, make_channel(url=receiver.url))
    pk = queued[0]
    assert delivery.deliver(pk) == "pending"
    first = Delivery.objects.get(pk=pk)
    assert not first.attempts[0]["ok"] and "Connection refused" in first.attempts[0]["result"]
    waited = first.next_attempt_at - dt.datetime.fromisoformat(first.attempts[0]["at"])
    assert waited == dt.timedelta(seconds=5)
    assert delivery.deliver(pk) == "not due" and not delivery.due().exists()
    Delivery.objects.filter(pk=pk).update(next_attempt_at=timezone.now())
    assert delivery.deliver(pk) == "pending"
    second = Delivery.objects.get(pk=pk)
    assert second.next_attempt_at - dt.datetime.fromisoformat(second.attempts[1]["at"]) == dt.timedelta(seconds=10)
    receiver.start()
    Delivery.objects.filter(pk=pk).update(next_attempt_at=timezone.now())
    assert list(delivery.due().values_list("pk", flat=True)) == [pk]
    assert delivery.deliver(pk) == "sent"
    assert delivery.deliver(pk) == "not runnable"
    assert len(receiver.requests) == 1
    assert [a["ok"] for a in Delivery.objects.get(pk=pk).attempts] == [False, False, True]


def test_a_receiver_that_answers_an_error_is_retried_and_given_up_on_after_the_limit(east, redis, queued, settings):
    failing = HttpReceiver(status=503)
    try:
        fire(east, redis, make_channel(url=failing.url))
        assert delivery.deliver(queued[0]) == "pending"
        assert Delivery.objects.get().attempts[0]["result"].startswith("HTTP 503")
        settings.ALERT_DELIVERY_GIVE_UP_SECONDS = 0
        Delivery.objects.update(next_attempt_at=timezone.now())
        assert delivery.deliver(queued[0]) == "failed"
        assert len(failing.requests) == 2
    finally:
        failing.stop()


def test_two_workers_delivering_at_once_send_once(east, redis, queued, receiver):
    fire(east, redis, make_channel(url=receiver.url))
    barrier, results = threading.Barrier(2), []

    def worker():
        try:
            barrier.wait()
            results.append(delivery.deliver(queued[0]))
        finally:
            close_old_connections()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(results) == ["not runnable", "sent"] and len(receiver.requests) == 1


def test_slack_gets_a_text_line_with_a_link(east, redis, queued, receiver):
    fire(east, redis, make_channel(kind="slack", url=receiver.url))
    delivery.deliver(queued[0])
    [message] = receiver.json()
    assert message["text"].startswith("[warning] stopped: east orders: STOPPED: no client is online")
    assert "|open in the console>" in message["text"]


def test_email_goes_through_smtp(east, redis, queued, settings):
    smtp = SmtpReceiver()
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
        fire(east, redis, make_channel(kind="email", url="", recipients="a@example.com, b@example.com"))
        assert delivery.deliver(queued[0]) == "sent"
        [mail] = smtp.messages
        assert sorted(mail["to"]) == ["a@example.com", "b@example.com"]
        assert "Subject: [RocketMQ console] [warning] stopped: east orders" in mail["data"]
        assert "Evidence: STOPPED: no client is online and lag is 8" in mail["data"]
    finally:
        smtp.stop()


def test_a_resolution_waits_for_its_firing_so_the_receiver_hears_them_in_order(east, redis, queued, receiver):
    receiver.stop()
    fire(east, redis, make_channel(url=receiver.url))
    firing = queued[0]
    assert delivery.deliver(firing) == "pending"  # the receiver is down: retried later
    publish(east, redis, [group("orders", lag=0, online=True)])
    resolved = queued[1]
    assert delivery.deliver(resolved) == "after the firing"
    assert len(Delivery.objects.get(pk=resolved).attempts) == 0  # not an attempt: nothing was sent
    receiver.start()
    Delivery.objects.filter(pk=firing).update(next_attempt_at=timezone.now())
    assert delivery.deliver(firing) == "sent"
    Delivery.objects.filter(pk=resolved).update(next_attempt_at=timezone.now())
    assert delivery.deliver(resolved) == "sent"
    assert [r["headers"]["X-Console-Event"] for r in receiver.requests] == ["firing", "resolved"]


def test_any_failure_of_a_send_is_an_attempt_logged_and_retried(east, redis, queued, monkeypatch):
    fire(east, redis, make_channel())

    def broken(delivery):
        raise RuntimeError("a bug in a channel")

    monkeypatch.setattr("consumers.alerts.channels.send", broken)
    assert delivery.deliver(queued[0]) == "pending"
    [attempt] = Delivery.objects.get().attempts
    assert attempt == {"at": attempt["at"], "ok": False, "result": "RuntimeError: a bug in a channel"}


def test_a_busy_worker_is_not_sent_the_same_delivery_every_five_seconds(east, redis, queued):
    fire(east, redis, make_channel())
    sent = []
    assert delivery.queue_due(sent.append) == 1 and delivery.queue_due(sent.append) == 0
    Delivery.objects.update(queued_at=timezone.now() - dt.timedelta(seconds=61))
    assert delivery.queue_due(sent.append) == 1 and sent == [queued[0], queued[0]]


def test_headlines_are_one_line():
    from consumers.alerts.channels import headline

    body = {"event": "firing", "alert": {"cluster": "east", "subject": "g", "rule": "r", "severity": "info",
                                         "evidence": "two\nlines\r\n"}}  # fmt: skip
    assert headline(body) == "[info] r: east g: two lines"
