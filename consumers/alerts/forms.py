from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from ..models import Cluster
from ..web.inputs import AsciiIntegerField
from .models import AlertRule


class SilenceForm(forms.Form):
    rule = forms.ModelChoiceField(AlertRule.objects.all(), required=False, label=_("Rule"),
                                  empty_label=_("every rule"))  # fmt: skip
    cluster = forms.ModelChoiceField(Cluster.objects.all(), required=False, label=_("Cluster"),
                                     empty_label=_("every cluster"), to_field_name="name")  # fmt: skip
    subject_pattern = forms.CharField(max_length=200, initial="*", label=_("groups or brokers"),
                                      help_text=_("shell-style: shop-*, or one name"))  # fmt: skip
    minutes = AsciiIntegerField(min_value=1, max_value=60 * 24 * 30, initial=60, label=_("for (minutes)"))
    reason = forms.CharField(max_length=500, label=_("Reason"))
