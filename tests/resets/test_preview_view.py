"""The reset form's preview box (an htmx fragment) without a broker: what it answers while the
form is being filled in. Input that does not make a reset yet is answered 200 with the prompt
or the message inside the box: htmx swaps only 2xx answers by default, and with DEBUG on
django-htmx's script replaces the whole document with any 400/403/404/500 answer."""

from __future__ import annotations

import pytest

from consumers.models import Cluster
from consumers.resets import services
from consumers.rocketmq import RocketMQError

GROUP = "G-orders"


@pytest.fixture
def operator(client, personas, redis):
    Cluster.objects.create(name="local", namesrv_addrs="127.0.0.1:1")  # never reached: the broker is not read
    client.force_login(personas["operator"])
    return client


@pytest.fixture
def no_broker(monkeypatch):
    """Fails the test if the preview reads the broker."""

    def refuse(*args, **kwargs):
        raise AssertionError("the broker was read")

    monkeypatch.setattr(services, "preview", refuse)


def preview(client, query: str):
    return client.get(f"/groups/local/{GROUP}/reset/preview/?{query}", HTTP_HX_REQUEST="true")


def test_the_form_opens_on_time_and_its_first_preview_asks_for_a_time(operator, no_broker):
    form = operator.get(f"/groups/local/{GROUP}/reset/").content.decode()
    assert '<option value="time" selected>' in form  # what the form's htmx load trigger previews
    answer = preview(operator, "strategy=time&timestamp=")
    assert answer.status_code == 200
    text = answer.content.decode()
    assert 'id="preview-prompt"' in text and "Choose a time" in text and 'class="error"' not in text


@pytest.mark.parametrize(
    ("query", "prompt"),
    [
        ("strategy=shift&shift=", "Enter N"),
        ("strategy=copy&source_group=", "Enter the group to copy"),
        ("strategy=exact&offsets=", "Enter the offsets"),
    ],
)
def test_a_strategy_without_its_input_yet_is_asked_for_it(operator, no_broker, query, prompt):
    answer = preview(operator, query)
    assert answer.status_code == 200 and prompt in answer.content.decode()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("strategy=nonsense", "Select a valid choice"),
        ("strategy=time&timestamp=yesterday", "Enter a valid date/time"),
        ("strategy=exact&offsets=orders%40broker-a%230", "line 1: write"),
        ("strategy=time&timestamp=2999-01-01T00:00", "is in the future"),
        ("strategy=shift&shift=0", "non-zero"),
    ],
)
def test_bad_input_is_answered_200_with_the_message_in_the_box(operator, query, message):
    answer = preview(operator, query)  # the last two are refused by the strategies, before the broker is read
    assert answer.status_code == 200
    text = answer.content.decode()
    assert 'id="preview-error"' in text and message in text


def test_a_broker_that_cannot_be_read_is_a_502_the_box_shows(operator, monkeypatch):
    def unreachable(*args, **kwargs):
        raise RocketMQError("connection refused", address="127.0.0.1:1")

    monkeypatch.setattr(services, "preview", unreachable)
    answer = preview(operator, "strategy=earliest")
    assert answer.status_code == 502 and "broker: connection refused" in answer.content.decode()
    # htmx does not swap a 5xx by default: the box opts in (static/js/base.js), so a preview of
    # the strategy chosen before is never left standing under the new one
    form = operator.get(f"/groups/local/{GROUP}/reset/").content.decode()
    assert '<div id="preview" data-swap-errors' in form
