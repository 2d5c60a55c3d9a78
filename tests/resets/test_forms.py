"""The reset form (consumers/resets/forms.py) reads numbers as the API does: the same range for
a shift and for exact offsets (strategies.SHIFT_RANGE, OFFSET_RANGE), ASCII digits only. The
10^30 shift the form once took was approved and ran; the API refused it."""

from __future__ import annotations

import pytest

from consumers.resets.forms import ResetForm
from consumers.resets.kind import API_PARAMS
from consumers.resets.strategies import InvalidReset, validate_params
from consumers.web.apischema import SchemaError

LONG_MAX = 9_223_372_036_854_775_807  # 2^63 - 1, worked out by hand
NOW = 1_700_000_000_000


def form_takes(field: str, text: str, strategy: str) -> bool:
    """The page's verdict: the form, then the strategy's own check (as reset_create runs them)."""
    form = ResetForm({"strategy": strategy, field: text}, topics=["T"])
    if not form.is_valid():
        return False
    try:
        validate_params(form.params(), now_ms=NOW)
    except InvalidReset:
        return False
    return True


def api_takes(params: dict) -> bool:
    """The API's verdict: the body's schema, then the same strategy check (services.request_reset)."""
    try:
        validate_params(API_PARAMS.clean(params, "body.params"), now_ms=NOW)
    except (SchemaError, InvalidReset):
        return False
    return True


@pytest.mark.parametrize(
    ("shift", "taken"),
    [(1, True), (-1, True), (LONG_MAX, True), (-LONG_MAX, True), (0, False), (LONG_MAX + 1, False),
     (-LONG_MAX - 1, False), (-LONG_MAX - 2, False), (10**30, False), (-(10**30), False)],
)  # fmt: skip
def test_form_and_api_take_the_same_shifts(shift, taken):
    assert form_takes("shift", str(shift), "shift") is taken
    assert api_takes({"strategy": "shift", "shift": shift}) is taken


@pytest.mark.parametrize(
    ("offset", "taken"),
    [(0, True), (1200, True), (LONG_MAX, True), (-1, False), (LONG_MAX + 1, False), (10**30, False)],
)
def test_form_and_api_take_the_same_exact_offsets(offset, taken):
    assert form_takes("offsets", f"T@broker-a#0 {offset}", "exact") is taken
    assert api_takes({"strategy": "exact", "offsets": {"T@broker-a#0": offset}}) is taken


@pytest.mark.parametrize("text", ["\u0663", "\uff13", "-\u0663", "\uff11\uff10", "+3", "3.0"])
def test_digits_other_than_ascii_are_no_shift_and_no_offset(text):
    form = ResetForm({"strategy": "shift", "shift": text}, topics=["T"])
    assert not form.is_valid() and form.errors["shift"] == ["write a whole number in digits 0-9"]
    form = ResetForm({"strategy": "exact", "offsets": f"T@broker-a#0 {text}"}, topics=["T"])
    assert not form.is_valid() and "line 1: write 'topic@broker#queue offset'" in form.errors["offsets"][0]
    assert not api_takes({"strategy": "shift", "shift": text})  # a string is not a number there either


def test_the_refusals_say_the_range():
    form = ResetForm({"strategy": "shift", "shift": str(10**30)}, topics=["T"])
    assert not form.is_valid()
    assert form.errors["shift"] == [f"must be between -{LONG_MAX} and {LONG_MAX}"]
    form = ResetForm({"strategy": "exact", "offsets": f"T@broker-a#0 1\nT@broker-a#1 {LONG_MAX + 1}"}, topics=["T"])
    assert not form.is_valid()
    assert form.errors["offsets"] == [f"line 2: the offset must be between 0 and {LONG_MAX}"]
