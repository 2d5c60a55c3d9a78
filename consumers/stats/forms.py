"""The statistics pages' period (7/30/90 days or a custom range) and the run form."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..inputs import add_range_problems

PRESETS = (7, 30, 90)
MAX_RANGE_DAYS = 366


class PeriodForm(forms.Form):
    days = forms.TypedChoiceField(choices=[(d, d) for d in PRESETS], coerce=int, required=False)
    since = forms.DateField(required=False, label=_("from"), widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label=_("to"), widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self):
        data = super().clean()
        add_range_problems(self, data, "since", "until")
        if "since" in self.errors or "until" in self.errors:
            return data  # said once, for its field
        since, until = data.get("since"), data.get("until")
        if bool(since) != bool(until):
            raise forms.ValidationError(_("a custom range needs both 'from' and 'to'"))
        if since and until:
            if until < since:
                raise forms.ValidationError(_("'to' is before 'from'"))
            if (until - since).days >= MAX_RANGE_DAYS:
                raise forms.ValidationError(_("at most %(days)s days") % {"days": MAX_RANGE_DAYS})
        return data

    def period(self) -> tuple[dt.date, dt.date]:
        data = self.cleaned_data
        if data.get("since"):
            return data["since"], data["until"]
        last = timezone.now().date()
        return last - dt.timedelta(days=(data.get("days") or 30) - 1), last


class RunForm(forms.Form):
    first = forms.DateField(label=_("from"), widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(label=_("to"), widget=forms.DateInput(attrs={"type": "date"}))
    cluster = forms.CharField(required=False, max_length=64, help_text=_("empty: every cluster"))

    def clean(self):
        data = super().clean()
        add_range_problems(self, data, "first", "last")
        return data
