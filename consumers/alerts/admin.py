"""Alert rules and channels are managed in the Django admin (the admin role), every save and
delete audited; alerts, deliveries and silences are read-only there (the Alerts page acts)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from .. import audit
from ..identity import remote_addr
from ..live.health import SEVERITY
from ..web.readonly_admin import ReadOnlyAdmin
from .models import Alert, AlertRule, Channel, Delivery, Silence


def _audit(request, action: str, details: dict) -> None:
    audit.record(action, username=request.user.get_username(), remote_addr=remote_addr(request), details=details)


def _where(url: str) -> str:
    """A URL as the audit log keeps it: scheme and host only. Slack-style webhook URLs carry
    their secret in the path (and some URLs a password), and every role reads the audit log,
    which can never be edited afterwards."""
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}/…"


class ChannelForm(forms.ModelForm):
    url = forms.URLField(required=False, assume_scheme="https", help_text=Channel._meta.get_field("url").help_text)
    # write-only: never rendered back; left empty, the saved secret stays
    secret = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False),
                             help_text=_("webhook: the HMAC-SHA256 key; left empty, the saved one stays"))  # fmt: skip

    class Meta:
        model = Channel
        fields = ["name", "kind", "url", "recipients", "secret", "enabled"]

    def clean_secret(self):
        value = self.cleaned_data.get("secret")
        self.secret_typed = bool(value)  # changed_data cannot tell: the field never shows the old one
        return value or (self.instance.secret if self.instance.pk else "")


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    list_display = ["name", "kind", "url", "recipients", "enabled"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        _audit(request, "alert-channel-saved", {"channel": obj.name, "kind": obj.kind, "url": _where(obj.url),
               "recipients": obj.recipients, "enabled": obj.enabled,
               "secret": "changed" if form.secret_typed else "unchanged"})  # fmt: skip

    def delete_model(self, request, obj):
        _audit(request, "alert-channel-deleted", {"channel": obj.name, "kind": obj.kind})
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):  # the list's bulk delete
        for obj in queryset:
            _audit(request, "alert-channel-deleted", {"channel": obj.name, "kind": obj.kind})
        super().delete_queryset(request, queryset)


class AlertRuleForm(forms.ModelForm):
    states = forms.MultipleChoiceField(choices=[(s, s) for s in SEVERITY], required=False,
                                       widget=forms.CheckboxSelectMultiple,
                                       help_text=_("state rules only"))  # fmt: skip

    class Meta:
        model = AlertRule
        fields = ["name", "enabled", "condition", "states", "threshold", "for_seconds", "keep_firing_seconds",
                  "clusters", "group_pattern", "severity", "channels", "capture_stacks"]  # fmt: skip


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = AlertRuleForm
    list_display = ["name", "condition", "threshold", "for_seconds", "keep_firing_seconds", "group_pattern", "severity",
                    "enabled"]  # fmt: skip
    filter_horizontal = ["clusters", "channels"]

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)  # the clusters and channels are saved here
        rule = form.instance
        _audit(request, "alert-rule-saved", {
            "rule": rule.name, "enabled": rule.enabled, "condition": rule.condition, "states": rule.states,
            "threshold": rule.threshold, "for_seconds": rule.for_seconds,
            "keep_firing_seconds": rule.keep_firing_seconds, "group_pattern": rule.group_pattern,
            "severity": rule.severity, "clusters": sorted(c.name for c in rule.clusters.all()) or "every cluster",
            "channels": sorted(c.name for c in rule.channels.all()),
        })  # fmt: skip

    def delete_model(self, request, obj):
        _audit(request, "alert-rule-deleted", {"rule": obj.name})
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):  # the list's bulk delete
        for obj in queryset:
            _audit(request, "alert-rule-deleted", {"rule": obj.name})
        super().delete_queryset(request, queryset)


@admin.register(Alert)
class AlertAdmin(ReadOnlyAdmin):
    list_display = ["rule", "cluster", "subject", "state", "started_at", "fired_at", "ended_at", "silenced_by"]
    list_filter = ["state", "rule"]


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ["alert", "channel", "event", "state", "created_at", "sent_at", "next_attempt_at"]
    list_filter = ["state", "event", "channel"]


@admin.register(Silence)
class SilenceAdmin(ReadOnlyAdmin):
    list_display = ["rule", "cluster", "subject_pattern", "starts_at", "ends_at", "created_by", "reason"]
