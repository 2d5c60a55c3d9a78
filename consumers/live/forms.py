"""Forms, also for query strings: a bad filter is a clear 400, never a silent default."""

from __future__ import annotations

from django import forms

from .health import SEVERITY
from .selectors import SORT_KEYS


class GroupFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=255, label="Search")
    cluster = forms.ChoiceField(required=False)
    health = forms.ChoiceField(required=False, choices=[("", "any")] + [(s, s) for s in SEVERITY])
    topic = forms.CharField(required=False, max_length=255)
    sort = forms.ChoiceField(required=False, choices=[(k, k) for k in SORT_KEYS])
    dir = forms.ChoiceField(required=False, choices=[("desc", "descending"), ("asc", "ascending")])
    page = forms.IntegerField(required=False, min_value=1, max_value=1_000_000)

    def __init__(self, data, *, cluster_names: list[str]):
        super().__init__(data)
        self.fields["cluster"].choices = [("", "all")] + [(n, n) for n in cluster_names]
        for field in self.fields.values():
            if isinstance(field, forms.ChoiceField):
                valid = ", ".join(value or "(empty)" for value, _ in field.choices)
                field.error_messages["invalid_choice"] = f"%(value)s is not valid; valid values: {valid}"

    def clean(self):
        unknown = sorted(set(self.data) - set(self.fields))
        if unknown:
            raise forms.ValidationError(
                f"unknown parameter(s) {', '.join(unknown)}; valid parameters: {', '.join(self.fields)}"
            )
        return super().clean()

    def selector_arguments(self) -> dict:
        data = self.cleaned_data
        return {
            "query": data["q"],
            "cluster": data["cluster"],
            "health": data["health"],
            "topic": data["topic"],
            "sort": data["sort"] or "lag",
            "descending": (data["dir"] or "desc") == "desc",
            "page": data["page"] or 1,
        }

    def error_text(self) -> str:
        return "; ".join(
            f"{field}: {' '.join(errors)}" if field != "__all__" else " ".join(errors)
            for field, errors in self.errors.items()
        )


class AllocationChartForm(forms.Form):
    hours = forms.IntegerField(required=False, min_value=1, max_value=24 * 7)  # per-queue rows: a week at most


class LagChartForm(forms.Form):
    hours = forms.IntegerField(required=False, min_value=1, max_value=24 * 31)
