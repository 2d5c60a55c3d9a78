"""The report form and the "report now" parameters; bad values are a clear 400."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..web.inputs import DateInput
from .content import ReportSpec
from .models import Report

FORMAT_CHOICES = [("csv", "CSV"), ("xlsx", "XLSX"), ("pdf", _("PDF (with charts)"))]


class ReportForm(forms.Form):
    clusters = forms.MultipleChoiceField(choices=[], widget=forms.CheckboxSelectMultiple, label=_("clusters"))
    group_filter = forms.CharField(required=False, max_length=255, label=_("groups containing"))
    first = forms.DateField(label=_("from (UTC)"), widget=DateInput())
    last = forms.DateField(label=_("to (UTC)"), widget=DateInput())
    granularity = forms.ChoiceField(choices=Report.Granularity.choices, initial="daily", label=_("granularity"))
    formats = forms.MultipleChoiceField(choices=FORMAT_CHOICES, widget=forms.CheckboxSelectMultiple,
                                        initial=["csv", "xlsx", "pdf"], label=_("formats"))  # fmt: skip

    def __init__(self, *args, cluster_names: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        # an unknown cluster gets its own message from the service, not "not a valid choice"
        self.fields["clusters"] = forms.MultipleChoiceField(
            choices=[(n, n) for n in cluster_names], widget=forms.CheckboxSelectMultiple, required=True,
            label=_("clusters"),
        )  # fmt: skip
        self.fields["clusters"].valid_value = lambda value: True
        today = timezone.now().date()
        self.fields["first"].initial = today - dt.timedelta(days=7)
        self.fields["last"].initial = today - dt.timedelta(days=1)

    def spec(self) -> ReportSpec:
        data = self.cleaned_data
        return ReportSpec(tuple(data["clusters"]), data["first"], data["last"], data["granularity"],
                          data["group_filter"].strip())  # fmt: skip


class LiveReportForm(forms.Form):
    cluster = forms.CharField(required=False, max_length=64, help_text=_("empty: every cluster"))
    group_filter = forms.CharField(required=False, max_length=255)
