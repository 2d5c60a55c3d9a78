"""The reset request form: a strategy, its parameters, the scope, and a reason."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils.translation import gettext_lazy as _

from ..web.inputs import AsciiDateTimeField, AsciiIntegerField, is_ascii_int, read_int
from .strategies import OFFSET_RANGE, SHIFT_RANGE, STRATEGIES


class ResetForm(forms.Form):
    strategy = forms.ChoiceField(label=_("Strategy"), choices=[(k, _(v)) for k, v in STRATEGIES.items()])
    topics = forms.MultipleChoiceField(
        required=False,
        label=_("Topics"),
        widget=forms.CheckboxSelectMultiple,
        help_text=_("none ticked: every subscribed topic"),
    )
    include_retry = forms.BooleanField(required=False, label=_("include the retry queues (%RETRY%group)"))
    timestamp = AsciiDateTimeField(
        required=False,
        label=_("time (UTC)"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}),
    )
    shift = AsciiIntegerField(  # the API's range (strategies.SHIFT_RANGE)
        required=False, min_value=SHIFT_RANGE[0], max_value=SHIFT_RANGE[1], label=_("Shift"),
        help_text=_("negative: replay N messages; positive: skip N"),
    )  # fmt: skip
    source_group = forms.CharField(required=False, max_length=255, label=_("copy from group"))
    offsets = forms.CharField(
        required=False,
        label=_("Offsets"),
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": "topic@broker-a#0 1200"}),
        help_text=_("one queue per line: topic@broker#queue offset"),
    )
    reason = forms.CharField(
        required=False, label=_("Reason"), widget=forms.Textarea(attrs={"rows": 2}), max_length=2000
    )

    def __init__(self, data=None, *, topics: list[str]):
        super().__init__(data)
        self.fields["topics"].choices = [(t, t) for t in topics]

    def clean_offsets(self) -> dict:
        parsed = {}
        for number, line in enumerate((self.cleaned_data.get("offsets") or "").splitlines(), start=1):
            if not line.strip():
                continue
            label, _space, offset = line.strip().rpartition(" ")
            if not label.strip() or not is_ascii_int(offset):
                raise forms.ValidationError(
                    _("line %(number)s: write 'topic@broker#queue offset', not %(line)r")
                    % {"number": number, "line": line.strip()}
                )
            try:  # the API's range (strategies.OFFSET_RANGE)
                parsed[label.strip()] = read_int(offset, *OFFSET_RANGE)
            except ValueError as exc:
                raise forms.ValidationError(
                    _("line %(number)s: the offset %(problem)s") % {"number": number, "problem": exc}
                ) from None
        return parsed

    def params(self) -> dict:
        """The strategy's parameters for the preview (checked there: InvalidReset)."""
        data = self.cleaned_data
        params = {"strategy": data["strategy"], "topics": data["topics"], "include_retry": data["include_retry"]}
        if data["timestamp"] is not None:
            moment = data["timestamp"]
            moment = moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment
            params["timestamp_ms"] = int(moment.timestamp() * 1000)
        if data["shift"] is not None:
            params["shift"] = data["shift"]
        if data["source_group"]:
            params["source_group"] = data["source_group"]
        if data["offsets"]:
            params["offsets"] = data["offsets"]
        return params
