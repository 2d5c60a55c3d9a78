"""The DLQ filter and redrive forms (consumers/dlq/forms.py) by hand-worked values: numbers in
ASCII digits within their range, times between 2000-01-01 and now (an end up to a day ahead),
as the API's selection (api.SELECTION) takes them."""

from __future__ import annotations

import datetime as dt

import pytest

from consumers.dlq.api import REDRIVE, SELECTION
from consumers.dlq.forms import DlqFilterForm, RedriveForm
from consumers.web.apischema import SchemaError

NOW = dt.datetime.now(dt.UTC)
TOMORROW = (NOW + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")  # a few seconds less than a day ahead
IN_TWO_DAYS = (NOW + dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")


def filter_errors(**data) -> dict:
    form = DlqFilterForm(data, can_read_bodies=True, strict=True)
    return {} if form.is_valid() else {k: " ".join(v) for k, v in form.errors.items()}


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"job": "\u0663"}, "job", "write a whole number in digits 0-9"),  # Arabic-Indic 3
        ({"job": "\uff13"}, "job", "write a whole number in digits 0-9"),  # fullwidth 3
        ({"job": "0"}, "job", "must be between 1 and 2147483647"),
        ({"job": "2147483648"}, "job", "must be between 1 and 2147483647"),
        ({"job": "1" + "0" * 30}, "job", "must be between 1 and 2147483647"),
        ({"since": "0001-01-01T00:00"}, "since", "must be on or after 2000-01-01 (UTC)"),
        ({"since": "1999-12-31T23:59:59"}, "since", "must be on or after 2000-01-01 (UTC)"),
        ({"since": TOMORROW}, "since", "UTC is in the future: nothing is stored after it yet"),
        ({"until": IN_TWO_DAYS}, "until", "UTC is in the future"),
        ({"until": "9999-12-31T00:00"}, "until", "9999-12-31 00:00:00 UTC is in the future"),
        ({"since": "\u0662\u0660\u0662\u0666-\u0660\u0661-\u0660\u0661T\u0660\u0660:\u0660\u0660"}, "since",
         "Enter a valid date/time"),  # 2026-01-01T00:00 in Arabic-Indic digits
    ],
)  # fmt: skip
def test_the_filter_refuses_with_the_field_and_why(data, field, says):
    errors = filter_errors(**data)
    assert says in errors.get(field, ""), errors


@pytest.mark.parametrize(
    "data",
    [{"job": "1"}, {"job": "2147483647"}, {"since": "2000-01-01T00:00"}, {"until": TOMORROW},
     {"since": "2026-01-01T00:00", "until": "2026-01-02T00:00"}],
)  # fmt: skip
def test_the_filter_takes_the_ends_of_each_range(data):
    assert filter_errors(**data) == {}


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("name", "text"),
    [("since", "1999-12-31T23:59"), ("since", "2000-01-01T00:00"), ("since", TOMORROW), ("until", TOMORROW),
     ("until", IN_TWO_DAYS), ("since", "2026-01-01T00:00")],
)  # fmt: skip
def test_the_filter_and_the_api_selection_take_the_same_times(name, text):
    try:
        SELECTION.clean({f"{name}_ms": ms(text)}, "body.selection")
        api_takes = True
    except SchemaError:
        api_takes = False
    assert (filter_errors(**{name: text}) == {}) is api_takes


def test_the_redrive_rate_is_ascii_digits_within_the_setting(settings):
    def rate_errors(rate: str) -> list[str]:
        form = RedriveForm({"target": "group", "rate": rate})
        return [] if form.is_valid() else form.errors["rate"]

    assert rate_errors("\u0663") == rate_errors("\uff13") == ["write a whole number in digits 0-9"]
    assert rate_errors("20001") == rate_errors("0") == ["must be between 1 and 20000"]
    assert rate_errors("20000") == rate_errors("1") == []
    REDRIVE.clean({"target": "group", "rate": 20000})  # the API's range, the same
    with pytest.raises(SchemaError, match="must be between 1 and 20000"):
        REDRIVE.clean({"target": "group", "rate": 20001})
    settings.REDRIVE_MAX_RATE = 50_000  # read when the form is made, not when it was imported
    assert rate_errors("50000") == [] and rate_errors("50001") == ["must be between 1 and 50000"]
    assert RedriveForm().fields["rate"].widget.attrs["max"] == 50_000
