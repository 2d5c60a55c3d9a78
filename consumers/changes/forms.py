"""Query-string forms of the change and audit pages: bad values are a clear 400."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from ..languages.labels import AUDIT_ACTIONS, CHANGE_STATES
from ..web.inputs import DateInput, add_range_problems


class ChangeFilterForm(forms.Form):
    # the states and actions by their words in the reader's language (their codes are what is sent)
    state = forms.ChoiceField(required=False, label=_("State"), choices=[("", _("any")), *CHANGE_STATES.items()])
    cluster = forms.CharField(required=False, max_length=64, label=_("Cluster"))
    group = forms.CharField(required=False, max_length=255, label=_("Group"))


class AuditFilterForm(forms.Form):
    cluster = forms.CharField(required=False, max_length=64, label=_("Cluster"))
    group = forms.CharField(required=False, max_length=255, label=_("Group"))
    user = forms.CharField(required=False, max_length=150, label=_("User"))
    action = forms.ChoiceField(required=False, label=_("Action"), choices=[("", _("any")), *AUDIT_ACTIONS.items()])
    since = forms.DateField(required=False, label=_("Since"), widget=DateInput())
    until = forms.DateField(required=False, label=_("Until"), widget=DateInput())
    format = forms.ChoiceField(required=False, label=_("Format"), choices=[("", _("page")), ("csv", "csv")])

    def clean(self):
        data = super().clean()
        add_range_problems(self, data, "since", "until")
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            raise forms.ValidationError(_("until is before since"))
        return data

    def filters(self) -> dict:
        return {k: v for k, v in self.cleaned_data.items() if k != "format"}


class DecisionForm(forms.Form):
    action = forms.ChoiceField(
        choices=[(a, a) for a in ("approve", "reject", "cancel", "refresh", "undo")],
    )
    reason = forms.CharField(required=False, max_length=2000)
    accept_unreadable = forms.BooleanField(required=False)
