"""The one validation layer for text from outside (consumers/inputs.py), by hand-worked cases."""

from __future__ import annotations

import datetime as dt

import pytest

from consumers.apischema import Map, Moment, SchemaError, Str
from consumers.inputs import EARLIEST_MS, ascii_int, is_ascii_int, moment_problem, text_problem

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
