"""Sending notifications to local receivers: the signed webhook, Slack, e-mail over SMTP;
a receiver that is down gets one delivery after it is back, every attempt logged; a delivery
claimed by two workers is sent once."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import itertools
import json
import threading
from types import SimpleNamespace

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


def test_slack_gets_a_text_line_with_a_link(east, redis, queued, receiver, settings):
    settings.CONSOLE_BASE_URL = "https://console.example/"
    fire(east, redis, make_channel(kind="slack", url=receiver.url))
    delivery.deliver(queued[0])
    [message] = receiver.json()
    assert message["text"].startswith("[warning] stopped: east orders: STOPPED: no client is online")
    assert message["text"].endswith("\n<https://console.example/groups/east/orders/|open in the console>")


def test_without_a_base_url_no_message_links_anywhere_and_each_says_why(east, redis, queued, receiver, settings):
    """CONSOLE_BASE_URL unset: no guessed link (it was http://127.0.0.1:8000, the receiver's own
    machine); the page's path, and that the base URL is not configured."""
    from consumers.alerts import channels

    settings.CONSOLE_BASE_URL = ""
    alert = fire(east, redis, make_channel(url=receiver.url), make_channel(name="chat", kind="slack", url=receiver.url))
    for pk in queued:
        assert delivery.deliver(pk) == "sent"
    webhook, slack = sorted(receiver.json(), key=lambda m: "text" in m)
    assert webhook["alert"]["url"] is None and webhook["alert"]["path"] == "/groups/east/orders/"
    assert slack["text"].endswith("\n/groups/east/orders/ in the console (no link: CONSOLE_BASE_URL is not configured)")
    assert ":8000" not in json.dumps([webhook, slack])
    body = channels.message(Delivery.objects.filter(channel__kind="webhook").get())
    entry = channels._alertmanager_entry(body)
    assert "generatorURL" not in entry and "CONSOLE_BASE_URL is not configured" in entry["annotations"]["console_path"]
    assert channels.link(alert) is None


def test_the_system_check_warns_in_production_when_the_base_url_is_unset_or_not_a_url(settings):
    from consumers.web.checks import console_base_url

    settings.DEBUG, settings.CONSOLE_BASE_URL = False, ""
    assert [m.id for m in console_base_url()] == ["consumers.W001"]
    settings.CONSOLE_BASE_URL = "console.example.com"
    assert [m.id for m in console_base_url()] == ["consumers.W002"]
    settings.CONSOLE_BASE_URL = "https://console.example.com"
    assert console_base_url() == []
    settings.DEBUG, settings.CONSOLE_BASE_URL = True, ""  # development: no link is no mistake
    assert console_base_url() == []


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
        assert "Open: /groups/east/orders/ in the console (no link: CONSOLE_BASE_URL is not configured)" in mail["data"]
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


def test_the_retry_schedule_is_the_documented_one(settings):
    settings.ALERT_RETRY_BASE_SECONDS, settings.ALERT_RETRY_MAX_SECONDS = 5, 300
    assert delivery.schedule(8) == [5, 10, 20, 40, 80, 160, 300, 300]


def test_each_retry_is_queued_for_its_time_5_10_20_s_apart(east, redis, queued, monkeypatch, settings):
    """Against a receiver that is down, on a clock of the test's: every failed attempt queues
    the next one at its backoff (eta), and the attempts are 5, 10, 20 s apart, not at beat's
    next tick nor held back by REQUEUE_AFTER (they were 11 s, then 63 s apart)."""
    settings.ALERT_RETRY_BASE_SECONDS = 5
    fire(east, redis, make_channel(url="http://127.0.0.1:9/hook"))  # nothing listens on port 9
    clock = [timezone.now()]
    monkeypatch.setattr(delivery, "timezone", SimpleNamespace(now=lambda: clock[0]))
    pk, etas = queued[0], []
    assert delivery.deliver(pk, retry=lambda pk, at: etas.append(at)) == "pending"
    for _ in range(3):
        clock[0] = etas[-1]  # its task runs at its eta
        sent = []
        assert delivery.queue_due(sent.append) == 0  # beat does not queue it again meanwhile
        assert delivery.deliver(pk, retry=lambda pk, at: etas.append(at)) == "pending"
    times = [dt.datetime.fromisoformat(a["at"]) for a in Delivery.objects.get(pk=pk).attempts]
    assert [(b - a).total_seconds() for a, b in itertools.pairwise(times)] == [5, 10, 20]
    assert (etas[-1] - times[-1]).total_seconds() == 40
    # a retry whose task was lost (a worker gone with it) is queued by beat, a minute late at most
    clock[0] = etas[-1] + delivery.REQUEUE_AFTER + dt.timedelta(seconds=1)
    sent = []
    assert delivery.queue_due(sent.append) == 1 and sent == [pk]


def test_the_task_queues_the_retry_with_its_eta(east, redis, queued, monkeypatch):
    from consumers.alerts import tasks

    fire(east, redis, make_channel(url="http://127.0.0.1:9/hook"))
    calls = []
    monkeypatch.setattr(tasks.deliver, "apply_async", lambda args, eta: calls.append((args, eta)))
    assert tasks.deliver(queued[0]) == "pending"
    row = Delivery.objects.get(pk=queued[0])
    assert calls == [((queued[0],), row.next_attempt_at)] and row.queued_at == row.next_attempt_at


def test_headlines_are_one_line():
    from consumers.alerts.channels import headline

    body = {"event": "firing", "alert": {"cluster": "east", "subject": "g", "rule": "r", "severity": "info",
                                         "evidence": "two\nlines\r\n"}}  # fmt: skip
    assert headline(body) == "[info] r: east g: two lines"
