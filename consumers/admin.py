from django import forms
from django.contrib import admin

from .models import AuditEvent, Cluster, HealthOverride, KnownBroker
from .web.readonly_admin import ReadOnlyAdmin


class ClusterForm(forms.ModelForm):
    # the secret is write-only: never rendered back into the page
    secret_key = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False))

    class Meta:
        model = Cluster
        fields = [
            "name",
            "namesrv_addrs",
            "proxy_addrs",
            "access_key",
            "secret_key",
            "read_only",
            "poll_interval",
            "enabled",
        ]

    def clean_secret_key(self):
        value = self.cleaned_data.get("secret_key")
        return value or (self.instance.secret_key if self.instance.pk else "")


class HealthOverrideInline(admin.TabularInline):
    model = HealthOverride
    extra = 0


class KnownBrokerInline(admin.TabularInline):
    """Brokers seen in this cluster. A broker that is gone for good is removed here (delete);
    until then a broker the name server no longer lists is shown as missing."""

    model = KnownBroker
    extra = 0
    fields = ["name", "address", "broker_cluster", "role", "first_seen", "last_seen", "missing_since"]
    readonly_fields = fields
    verbose_name_plural = "known brokers (tick delete to forget a broker that is gone for good)"

    def has_add_permission(self, request, obj=None):
        return False  # brokers are learned from the name server, never typed in


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterForm
    list_display = ["name", "namesrv_addrs", "poll_interval", "enabled", "read_only", "uses_acl"]
    inlines = [KnownBrokerInline, HealthOverrideInline]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Read-only: the audit log is append-only, in the admin as everywhere."""

    list_display = ["at", "username", "action", "cluster", "group", "change_request", "remote_addr"]
    list_filter = ["action", "cluster"]
    search_fields = ["username", "group"]


from .alerts import admin as alerts_admin  # noqa: E402, F401  (its models register there)
from .identity import admin as identity_admin  # noqa: E402, F401  (grants, IdP accounts, refused tokens)
