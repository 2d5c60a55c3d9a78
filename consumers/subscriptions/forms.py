"""The config change form: each changeable field, blank for "as it is"; and why."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from ..web.inputs import AsciiIntegerField
from .services import EDITABLE

UNCHANGED = [("", _("as it is")), ("true", "true"), ("false", "false")]


def _switch(label):
    return forms.TypedChoiceField(label=label, choices=UNCHANGED, required=False, empty_value=None,
                                  coerce=lambda v: v == "true")  # fmt: skip


class ConfigForm(forms.Form):
    consumeEnable = _switch(_("consumeEnable (false: paused)"))
    retryMaxTimes = AsciiIntegerField(
        label="retryMaxTimes", required=False, min_value=EDITABLE["retryMaxTimes"].low,
        max_value=EDITABLE["retryMaxTimes"].high, help_text=_("blank: as it is"),
    )  # fmt: skip
    consumeMessageOrderly = _switch("consumeMessageOrderly")
    consumeBroadcastEnable = _switch("consumeBroadcastEnable")
    reason = forms.CharField(label=_("Reason"), widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)

    def values(self) -> dict:
        return {name: self.cleaned_data[name] for name in EDITABLE if self.cleaned_data.get(name) is not None}


class PauseForm(forms.Form):
    """Pause or resume: consumeEnable on every broker that has the group."""

    action = forms.ChoiceField(label=_("Action"), choices=[("pause", _("pause")), ("resume", _("resume"))])
    reason = forms.CharField(label=_("Reason"), max_length=2000)
    emergency = forms.BooleanField(required=False, label=_("emergency: run it now, without a second approver"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not settings.CHANGES_EMERGENCY_PAUSE:
            del self.fields["emergency"]


class ModeForm(forms.Form):
    """Switch the group between POP and PULL on one topic, on every master broker."""

    topic = forms.CharField(label=_("Topic"), max_length=255)
    mode = forms.ChoiceField(label=_("Mode"), choices=[("POP", "POP"), ("PULL", "PULL")])
    share = AsciiIntegerField(label="popShareQueueNum", required=False, min_value=1, max_value=64, initial=8,
                              help_text=_("POP: how many clients share a queue"))  # fmt: skip
    reason = forms.CharField(label=_("Reason"), max_length=2000)
