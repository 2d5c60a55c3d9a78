"""The skip request form: how many messages from the pinned one, whether to keep copies in the
DLQ, and why."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from ..web.inputs import AsciiIntegerField
from .services import MAX_MESSAGES


class SkipForm(forms.Form):
    count = AsciiIntegerField(
        label=_("Messages"), min_value=1, max_value=MAX_MESSAGES, initial=1,
        help_text=_("from the pinned one on; the offset moves past them"),
    )  # fmt: skip
    copy_to_dlq = forms.BooleanField(required=False, initial=True, label=_("keep a copy of each in the group's DLQ"))
    reason = forms.CharField(label=_("Reason"), widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)
