"""Query-string forms of the change and audit pages: bad values are a clear 400."""

from __future__ import annotations

from django import forms

from .models import State

ACTIONS = [
    # change requests
    "request", "approve", "reject", "cancel", "expire", "refresh-preview", "run", "resume", "result",
    # DLQ
    "redrive-plan", "redrive-pause", "redrive-resume", "redrive-cancel", "redrive-run", "redrive-result",
    "dlq-export", "dlq-make-readable",
    # reports
    "report-download", "report-scheduled",
    # security
    "api-token-create", "api-token-revoke", "login-locked-out",
]  # fmt: skip


class ChangeFilterForm(forms.Form):
    state = forms.ChoiceField(required=False, choices=[("", "any")] + list(State.choices))
    cluster = forms.CharField(required=False, max_length=64)
    group = forms.CharField(required=False, max_length=255)


class AuditFilterForm(forms.Form):
    cluster = forms.CharField(required=False, max_length=64)
    group = forms.CharField(required=False, max_length=255)
    user = forms.CharField(required=False, max_length=150)
    action = forms.ChoiceField(required=False, choices=[("", "any")] + [(a, a) for a in ACTIONS])
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    format = forms.ChoiceField(required=False, choices=[("", "page"), ("csv", "csv")])

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            raise forms.ValidationError("until is before since")
        return data

    def filters(self) -> dict:
        return {k: v for k, v in self.cleaned_data.items() if k != "format"}


class DecisionForm(forms.Form):
    action = forms.ChoiceField(
        choices=[(a, a) for a in ("approve", "reject", "cancel", "refresh", "undo")],
    )
    reason = forms.CharField(required=False, max_length=2000)
    accept_unreadable = forms.BooleanField(required=False)
