"""The one validation layer for text from outside (consumers/web/inputs.py), by hand-worked cases."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django import forms

from consumers.web.apischema import Map, Moment, SchemaError, Str
from consumers.web.inputs import (
    EARLIEST_MS,
    AsciiDateTimeField,
    AsciiIntegerField,
    ascii_int,
    is_ascii_int,
    moment_problem,
    read_int,
    text_problem,
    when_problem,
)

NOW_MS = int(dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize("text", ["²", "¹²", "①", "١٢", "12²", "+1", "", "-", "1 2", "0x10", "1_000"])
def test_only_ascii_digits_are_digits(text):
    assert not is_ascii_int(text) and ascii_int(text) is None


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("1200", 1200), ("-3", -3), ("007", 7)])
def test_ascii_integers_are_read(text, value):
    assert ascii_int(text) == value


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\x00", "ok\x00"])
def test_lone_surrogates_and_nul_are_refused(text):
    assert text_problem(text)
    with pytest.raises(SchemaError):
        Str().clean(text, "body.cluster")
    with pytest.raises(SchemaError):
        Map(Str()).clean({text: "x"}, "body.offsets")


def test_valid_unicode_is_text():
    assert text_problem("消费者组-😀 ünïcode") is None  # a pair of surrogates in UTF-16 is one code point here


@pytest.mark.parametrize(
    ("ms", "past_only", "says"),
    [
        (2**63 - 1, True, "after the year 9999"),
        (NOW_MS + 1, True, "in the future: nothing is stored"),
        (NOW_MS + 86_400_000 - 1, False, None),  # a day of slack when the future is allowed
        (NOW_MS + 86_400_000 + 1, False, "in the future"),
        (EARLIEST_MS - 1, True, "after 2000-01-01"),
        (0, False, "after 2000-01-01"),
        (EARLIEST_MS, True, None),
        (NOW_MS, True, None),
    ],
)
def test_moments_lie_between_2000_and_now_or_a_day_ahead(ms, past_only, says):
    problem = moment_problem(ms, now_ms=NOW_MS, past_only=past_only)
    assert (problem is None) if says is None else (says in problem)


def test_the_api_moment_refuses_years_python_cannot_show():
    with pytest.raises(SchemaError, match="after the year 9999"):
        Moment().clean(2**63 - 1, "body.selection.until_ms")
    assert Moment(nullable=True).clean(None, "x") is None


def test_the_api_moment_of_a_filter_start_may_not_be_after_now():
    a_minute_ahead = int(time.time() * 1000) + 60_000
    with pytest.raises(SchemaError, match="in the future: nothing is stored"):
        Moment(past_only=True).clean(a_minute_ahead, "body.selection.since_ms")
    assert Moment().clean(a_minute_ahead, "body.selection.until_ms") == a_minute_ahead  # a day of slack
    assert Moment(past_only=True).clean(EARLIEST_MS, "body.selection.since_ms") == EARLIEST_MS


# Arabic-Indic 3, fullwidth 3, and what int() reads besides ASCII digits
NOT_ASCII_NUMBERS = ["\u0663", "\uff13", "\u0661\u0662", "\uff11\uff12", "+3", "1_000", "3.0", "3e2", "0x10", "²"]


@pytest.mark.parametrize("text", NOT_ASCII_NUMBERS)
def test_a_form_number_is_ascii_digits_only(text):
    field = AsciiIntegerField(min_value=-1, max_value=1000)
    with pytest.raises(forms.ValidationError, match="write a whole number in digits 0-9"):
        field.clean(text)
    with pytest.raises(ValueError, match="write a whole number in digits 0-9"):
        read_int(text, -1, 1000)


def test_django_s_own_integer_field_reads_other_digits_which_is_why_it_is_not_used():
    assert forms.IntegerField().clean("\u0663") == 3 and forms.IntegerField().clean("\uff13") == 3


@pytest.mark.parametrize(
    ("text", "value"),
    [("-1", -1), ("0", 0), ("64", 64), (" 7 ", 7), ("007", 7), ("-" + "0" * 40 + "1", -1), ("", None)],
)
def test_a_form_number_in_range_is_read(text, value):
    assert AsciiIntegerField(min_value=-1, max_value=64, required=False).clean(text) == value


@pytest.mark.parametrize(
    "text", ["-2", "65", "10" + "0" * 29, "-9223372036854775809", "9223372036854775808", "9" * 5000]
)
def test_a_form_number_out_of_range_says_the_whole_range(text):
    field = AsciiIntegerField(min_value=-1, max_value=64)
    with pytest.raises(forms.ValidationError, match="must be between -1 and 64"):
        field.clean(text)


def test_the_range_is_the_field_s_when_it_cleans_and_the_widget_says_it():
    field = AsciiIntegerField(min_value=1, max_value=10)
    assert (field.widget.attrs["min"], field.widget.attrs["max"]) == (1, 10)
    field.max_value = 20  # as a form sets it from a setting in its __init__
    assert field.clean("15") == 15
    with pytest.raises(forms.ValidationError, match="must be between 1 and 20"):
        field.clean("21")


def test_a_time_is_ascii_digits_only():
    arabic = "\u0662\u0660\u0662\u0666-\u0660\u0661-\u0660\u0661T\u0660\u0661:\u0660\u0661"  # 2026-01-01T01:01
    assert forms.DateTimeField().clean(arabic) == dt.datetime(2026, 1, 1, 1, 1, tzinfo=dt.UTC)  # Django's reads it
    with pytest.raises(forms.ValidationError):
        AsciiDateTimeField().clean(arabic)
    assert AsciiDateTimeField().clean("2026-01-01T01:01") == dt.datetime(2026, 1, 1, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("moment", "past_only", "says"),
    [
        (dt.date(1, 1, 1), True, "on or after 2000-01-01 (UTC)"),
        (dt.datetime(1999, 12, 31, 23, 59, 59), False, "on or after 2000-01-01"),
        (dt.date(2000, 1, 1), True, None),
        (dt.date(2026, 11, 26), True, None),  # today's midnight is before noon
        (dt.date(2026, 11, 27), True, "2026-11-27 00:00:00 UTC is in the future: nothing is stored"),
        (dt.date(2026, 11, 27), False, None),  # a day ahead is allowed where the future is
        (dt.date(2026, 11, 28), False, "2026-11-28 00:00:00 UTC is in the future"),
        (dt.date(9999, 12, 31), False, "9999-12-31 00:00:00 UTC is in the future"),
        (dt.datetime(2026, 11, 26, 12, 0, 1, tzinfo=dt.UTC), True, "12:00:01 UTC is in the future"),
        (dt.datetime(2026, 11, 26, 20, 0, tzinfo=dt.timezone(dt.timedelta(hours=8))), True, None),  # 12:00 UTC
    ],
)
def test_a_typed_date_or_time_lies_between_2000_and_now(moment, past_only, says):
    problem = when_problem(moment, now_ms=NOW_MS, past_only=past_only)
    assert (problem is None) if says is None else (says in problem), problem
