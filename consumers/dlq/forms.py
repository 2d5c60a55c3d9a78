"""DLQ filters (query strings) and the redrive form; bad values are a clear 400."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext_lazy as _

from ..web.inputs import AsciiDateTimeField, AsciiIntegerField, add_range_problems, decode_cursor
from .browse import Selection
from .models import RedriveJob

DATETIME = {"input_formats": ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]}


def _ms(moment: dt.datetime | None) -> int | None:
    if moment is None:
        return None
    return int((moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment).timestamp() * 1000)


class DlqFilterForm(forms.Form):
    since = AsciiDateTimeField(required=False, label=_("from (UTC)"), **DATETIME,
                               widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))  # fmt: skip
    until = AsciiDateTimeField(required=False, label=_("to (UTC)"), **DATETIME,
                               widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))  # fmt: skip
    key = forms.CharField(required=False, max_length=255, label=_("Key"))
    tag = forms.CharField(required=False, max_length=255, label=_("Tag"))
    msg_id = forms.CharField(required=False, max_length=128, label=_("message id"))
    original_topic = forms.CharField(required=False, max_length=255, label=_("Original topic"))
    job = AsciiIntegerField(required=False, min_value=1, max_value=2**31 - 1, label=_("came back after job #"))
    body = forms.CharField(required=False, max_length=255, label=_("body contains"))
    cursor = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, data=None, *, can_read_bodies: bool, strict: bool = False):
        """Searching bodies reads them: for those who may read bodies (operators) only. For the
        others the field is not shown, and a body filter is refused rather than ignored, so a
        script learns why its filter did nothing. `strict` (the API): a parameter that is not
        a filter is a 400, not ignored, so a misspelt filter never lists the whole DLQ."""
        super().__init__(data)
        self.strict = strict
        if not can_read_bodies:
            del self.fields["body"]
            if data is not None and data.get("body"):
                raise PermissionDenied(
                    _("filtering by message body needs the operator role (bodies are for operators)")
                )

    def clean(self):
        # base_fields: `body` is a known parameter even where it was removed (a viewer's empty one)
        unknown = sorted(set(self.data) - set(self.base_fields)) if self.strict else []
        if unknown:
            raise forms.ValidationError(
                _("unknown parameter(s) %(unknown)s; valid parameters: %(valid)s")
                % {"unknown": ", ".join(unknown), "valid": ", ".join(self.base_fields)}
            )
        data = super().clean()
        add_range_problems(self, data, "since", "until")  # as the API's since_ms and until_ms (api.SELECTION)
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            raise forms.ValidationError(_("'to' is before 'from'"))
        return data

    def clean_cursor(self) -> dict | None:
        raw = self.cleaned_data.get("cursor")
        if not raw:
            return None
        try:
            return decode_cursor(raw, lambda k, v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def error_text(self) -> str:
        return "; ".join(
            f"{field}: {' '.join(errors)}" if field != "__all__" else " ".join(errors)
            for field, errors in self.errors.items()
        )

    def selection(self, ids=()) -> Selection:
        data = self.cleaned_data
        return Selection(
            since_ms=_ms(data["since"]), until_ms=_ms(data["until"]), key=data["key"].strip(), tag=data["tag"].strip(),
            msg_id=data["msg_id"].strip(), original_topic=data["original_topic"].strip(), body=data.get("body", ""),
            ids=frozenset(i.strip() for i in ids if i.strip()), job=data.get("job"),
        )  # fmt: skip


class RedriveForm(forms.Form):
    target = forms.ChoiceField(label=_("Target"), choices=RedriveJob.Target.choices)
    target_topic = forms.CharField(required=False, max_length=255, label=_("Target topic"))
    rate = AsciiIntegerField(
        label=_("Rate"),
        min_value=1,
        max_value=settings.REDRIVE_MAX_RATE,
        initial=settings.REDRIVE_DEFAULT_RATE,
        help_text=_("messages per second"),
    )
    reason = forms.CharField(
        required=False, label=_("Reason"), max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    ids = forms.CharField(required=False, label=_("Ids"), widget=forms.Textarea(attrs={"rows": 2}),
                          help_text=_("optional: only these message ids (one per line)"))  # fmt: skip
    accept_unreadable = forms.BooleanField(
        required=False, label=_("Readable brokers only"),
        help_text=_("if a broker holding the DLQ cannot be read, redrive what the others hold "
                    "and leave its dead letters"),
    )  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # the setting as it is now, not at import: redrive.plan_redrive checks that, for the API too
        self.fields["rate"].max_value = settings.REDRIVE_MAX_RATE
        self.fields["rate"].widget.attrs["max"] = settings.REDRIVE_MAX_RATE
