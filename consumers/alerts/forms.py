from __future__ import annotations

from django import forms

from ..models import Cluster
from .models import AlertRule


class SilenceForm(forms.Form):
    rule = forms.ModelChoiceField(AlertRule.objects.all(), required=False, empty_label="every rule")
    cluster = forms.ModelChoiceField(Cluster.objects.all(), required=False, empty_label="every cluster",
                                     to_field_name="name")  # fmt: skip
    subject_pattern = forms.CharField(max_length=200, initial="*", label="groups or brokers",
                                      help_text="shell-style: shop-*, or one name")  # fmt: skip
    minutes = forms.IntegerField(min_value=1, max_value=60 * 24 * 30, initial=60, label="for (minutes)")
    reason = forms.CharField(max_length=500)
