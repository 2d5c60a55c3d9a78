"""Alert e-mails in each recipient's language: one delivery, one message per language over a
local SMTP server, each address reached once, also when the server takes one language's message
and refuses the next. Other channels write in the site default; the webhook's JSON stays English."""

from __future__ import annotations

import email
import email.policy
import json

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone, translation
from django.utils.translation import gettext

from consumers.alerts import channels, delivery
from consumers.alerts.models import Alert, Delivery
from consumers.languages.models import LanguagePreference
from tests.alerts.conftest import make_channel, make_rule
from tests.support.published import group, publish
from tests.support.receivers import HttpReceiver, SmtpReceiver

RECIPIENTS = "li@example.com, ann@example.com, ops@example.com"  # Chinese, English, nobody known


@pytest.fixture
def smtp(settings):
    receiver = SmtpReceiver()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", receiver.port
    yield receiver
    receiver.stop()


@pytest.fixture
def readers(transactional_db):
    """li reads Chinese, ann English; ops@ is no user's address (the site default)."""
    users = get_user_model().objects
    LanguagePreference.objects.create(user=users.create_user("li", email="li@example.com"), language="zh-hans")
    LanguagePreference.objects.create(user=users.create_user("ann", email="ann@example.com"), language="en")


def fire(east, redis, *channels_) -> Alert:
    make_rule(*channels_)
    publish(east, redis, [group("orders", lag=8, online=False)])
    return Alert.objects.get()


def mails(smtp) -> list[tuple[list[str], str, str]]:
    """(recipients, subject, body) of each message the server took, decoded."""
    found = []
    for message in smtp.messages:
        parsed = email.message_from_bytes(message["data"].encode(), policy=email.policy.default)  # 8bit UTF-8
        # a long encoded subject is folded from its first line: unfolded, it starts with a space
        found.append((sorted(message["to"]), str(parsed["Subject"]).strip(), parsed.get_content()))
    return found


def chinese(text: str, **values) -> str:
    with translation.override("zh-hans"):
        return gettext(text) % values


def test_each_recipient_reads_the_alert_in_their_language_in_one_delivery(east, redis, queued, smtp, readers):
    alert = fire(east, redis, make_channel(kind="email", url="", recipients=RECIPIENTS))
    assert delivery.deliver(queued[0]) == "sent"
    assert delivery.deliver(queued[0]) == "not runnable"  # sent once: nothing more goes out
    (english_to, english_subject, english), (chinese_to, chinese_subject, body) = mails(smtp)
    assert english_to == ["ann@example.com", "ops@example.com"] and chinese_to == ["li@example.com"]
    assert english_subject == "[RocketMQ console] [warning] stopped: east orders: " + alert.evidence
    assert "Evidence: STOPPED: no client is online and lag is 8" in english and "依据" not in english
    with translation.override("zh-hans"):
        evidence = channels.evidence_text(alert.evidence)
    assert evidence == "STOPPED: " + chinese("no client is online and lag is %(lag)s", lag=8)  # the state stays
    assert chinese_subject == f"[{chinese('RocketMQ console')}] [warning] stopped: east orders: {evidence}"
    assert chinese("Evidence: %(evidence)s", evidence=evidence) in body
    assert chinese("Group: %(name)s", name="orders") in body and "Evidence:" not in body
    sent = Delivery.objects.get()
    assert sent.state == "sent" and [a["result"] for a in sent.attempts] == ["mailed to 3 address(es)"]


def test_a_language_refused_after_another_was_taken_is_retried_alone(east, redis, queued, smtp, readers, settings):
    """The server takes the English message, refuses the Chinese one's only recipient: the
    attempt failed and says whom it reached; the retry mails li alone. Nobody gets it twice."""
    settings.ALERT_RETRY_BASE_SECONDS = 5
    smtp.refuse.add("li@example.com")
    fire(east, redis, make_channel(kind="email", url="", recipients=RECIPIENTS))
    assert delivery.deliver(queued[0]) == "pending"
    [first] = Delivery.objects.get().attempts
    assert not first["ok"] and first["result"].startswith("accepted by ann@example.com, ops@example.com; ")
    assert "SMTPRecipientsRefused" in first["result"]
    smtp.refuse.clear()
    Delivery.objects.update(next_attempt_at=timezone.now())
    assert delivery.deliver(queued[0]) == "sent"
    reached = sorted(address for to, _, _ in mails(smtp) for address in to)
    assert reached == ["ann@example.com", "li@example.com", "ops@example.com"]
    assert Delivery.objects.get().attempts[1]["result"] == "mailed to 1 address(es), 2 before"


def test_a_result_cut_short_keeps_only_the_whole_addresses():
    cut = {"ok": False, "result": "accepted by a@example.com, b@exa"}  # delivery.py keeps 300 characters
    whole = {"ok": False, "result": "accepted by c@example.com; SMTPRecipientsRefused: ..."}
    assert channels._accepted([cut, whole, {"ok": False, "result": "OSError: down"}]) == {
        "a@example.com",
        "c@example.com",
    }


def test_other_channels_write_in_the_site_default_and_the_webhook_stays_english(east, redis, queued, settings):
    settings.LANGUAGE_CODE, settings.CONSOLE_BASE_URL = "zh-hans", ""
    receiver = HttpReceiver()
    try:
        alert = fire(east, redis, make_channel(url=receiver.url), make_channel(name="chat", kind="slack",
                                                                                url=receiver.url))  # fmt: skip
        with translation.override("en"):  # whatever the worker had active
            assert [delivery.deliver(pk) for pk in queued] == ["sent", "sent"]
        webhook, slack = sorted(receiver.json(), key=lambda m: "text" in m)
        assert webhook["alert"]["evidence"] == alert.evidence and "schema" in webhook  # data, as the API has it
        assert chinese("no link: CONSOLE_BASE_URL is not configured") in slack["text"]
        assert chinese("no client is online and lag is %(lag)s", lag=8) in slack["text"]
        assert "no client is online" in json.dumps(webhook)
    finally:
        receiver.stop()
