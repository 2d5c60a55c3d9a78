"""The statistics pages' period (7/30/90 days or a custom range) and the run form."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..web.inputs import DateInput, add_range_problems

PRESETS = (7, 30, 90)
MAX_RANGE_DAYS = 366


class PeriodForm(forms.Form):
    days = forms.TypedChoiceField(choices=[(d, d) for d in PRESETS], coerce=int, required=False)
    since = forms.DateField(required=False, label=_("from"), widget=DateInput())
    until = forms.DateField(required=False, label=_("to"), widget=DateInput())

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
        """A preset pressed (its button sends days, beside the range the inputs hold), else the
        range, else the last 30 days."""
        data = self.cleaned_data
        last = timezone.now().date()
        if data.get("since") and not data.get("days"):
            return data["since"], data["until"]
        return last - dt.timedelta(days=(data.get("days") or 30) - 1), last

    @property
    def shown(self) -> tuple[str, str]:
        """The date inputs' values: the period the page shows, as YYYY-MM-DD in every language
        (the only form a browser's date input takes), or what was typed when it is not valid."""
        if self.is_valid():
            return tuple(day.isoformat() for day in self.period())
        return self.data.get("since", ""), self.data.get("until", "")


class RunForm(forms.Form):
    first = forms.DateField(label=_("from"), widget=DateInput())
    last = forms.DateField(label=_("to"), widget=DateInput())
    cluster = forms.CharField(required=False, max_length=64, help_text=_("empty: every cluster"))

    def clean(self):
        data = super().clean()
        add_range_problems(self, data, "first", "last")
        return data
