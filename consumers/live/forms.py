"""Forms, also for query strings: a bad filter is a clear 400, never a silent default."""

from __future__ import annotations

import base64
import binascii
import json

from django import forms
from django.utils.translation import gettext_lazy as _

from ..web.inputs import AsciiIntegerField
from .health import SEVERITY
from .selectors import SORT_KEYS

# the sort keys (the API's `sort` values) in words, for the page's select
SORT_LABELS = {
    "lag": _("lag"),
    "lag_seconds": _("lag (s)"),
    "tps": _("consume TPS"),
    "retry": _("retry lag"),
    "dlq": _("DLQ"),
    "drain": _("time to drain"),
    "health": _("health"),
    "age": _("data age"),
    "group": _("group"),
    "cluster": _("cluster"),
}


class GroupFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=255, label=_("Search"))
    cluster = forms.ChoiceField(required=False)
    health = forms.ChoiceField(required=False, choices=[("", _("any"))] + [(s, s) for s in SEVERITY])
    topic = forms.CharField(required=False, max_length=255, label=_("Topic"))
    sort = forms.ChoiceField(required=False, choices=[(k, SORT_LABELS.get(k, k)) for k in SORT_KEYS])
    dir = forms.ChoiceField(required=False, choices=[("desc", _("descending")), ("asc", _("ascending"))])
    page = AsciiIntegerField(required=False, min_value=1, max_value=1_000_000)
    cursor = forms.CharField(required=False, max_length=2000, help_text=_("the API's next_cursor"))
    limit = AsciiIntegerField(required=False, min_value=1, max_value=1000, help_text=_("rows per page (API)"))
    idle_days = AsciiIntegerField(
        required=False, min_value=0, max_value=3650, label=_("Idle for days"),
        help_text=_("only groups with no client online for at least this many days"),
    )  # fmt: skip

    def clean_cursor(self) -> dict | None:
        """The API's opaque cursor back: a row's place in the order (see selectors.group_page)."""
        text = self.cleaned_data["cursor"]
        if not text:
            return None
        try:
            place = json.loads(base64.urlsafe_b64decode(text.encode() + b"=" * (-len(text) % 4)))
        except (ValueError, binascii.Error):
            raise forms.ValidationError(_("not a cursor this API gave")) from None
        valid = isinstance(place, dict) and set(place) == {"value", "group", "cluster", "sort", "dir"}
        valid = valid and all(isinstance(place[k], str) for k in ("group", "cluster", "sort", "dir"))
        valid = valid and (place["value"] is None or type(place["value"]) in (int, float, str))
        if not valid:
            raise forms.ValidationError(_("not a cursor this API gave"))
        return place

    def __init__(self, data, *, cluster_names: list[str]):
        super().__init__(data)
        self.fields["cluster"].choices = [("", _("all"))] + [(n, n) for n in cluster_names]
        for field in self.fields.values():
            if isinstance(field, forms.ChoiceField):
                valid = ", ".join(value or str(_("(empty)")) for value, _label in field.choices)
                # %(value)s is Django's, filled in when a value is refused
                field.error_messages["invalid_choice"] = _("%%(value)s is not valid; valid values: %(valid)s") % {
                    "valid": valid
                }

    def clean(self):
        unknown = sorted(set(self.data) - set(self.fields))
        if unknown:
            raise forms.ValidationError(
                _("unknown parameter(s) %(unknown)s; valid parameters: %(valid)s")
                % {"unknown": ", ".join(unknown), "valid": ", ".join(self.fields)}
            )
        data = super().clean()
        place = data.get("cursor")
        if place and (place["sort"], place["dir"]) != (data.get("sort") or "lag", data.get("dir") or "desc"):
            raise forms.ValidationError(_("the cursor belongs to another sort order: keep sort and dir as they were"))
        if place and data.get("page"):
            raise forms.ValidationError(_("give page or cursor, not both"))
        return data

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
            "per_page": data["limit"] or 100,
            "cursor": {k: data["cursor"][k] for k in ("value", "group", "cluster")} if data["cursor"] else None,
            "idle_days": data["idle_days"],
        }

    def encode_cursor(self, place: dict | None) -> str | None:
        """A page's next_cursor for the API (opaque: base64 of JSON, with the order it belongs to)."""
        if place is None:
            return None
        whole = {**place, "sort": self.cleaned_data["sort"] or "lag", "dir": self.cleaned_data["dir"] or "desc"}
        return base64.urlsafe_b64encode(json.dumps(whole, separators=(",", ":")).encode()).decode().rstrip("=")

    def error_text(self) -> str:
        return "; ".join(
            f"{field}: {' '.join(errors)}" if field != "__all__" else " ".join(errors)
            for field, errors in self.errors.items()
        )


class AllocationChartForm(forms.Form):
    hours = AsciiIntegerField(required=False, min_value=1, max_value=24 * 7)  # per-queue rows: a week at most


class LagChartForm(forms.Form):
    hours = AsciiIntegerField(required=False, min_value=1, max_value=24 * 31)
