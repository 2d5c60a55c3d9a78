from django import forms
from django.contrib import admin

from .models import Cluster, HealthOverride


class ClusterForm(forms.ModelForm):
    # the secret is write-only: never rendered back into the page
    secret_key = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False))

    class Meta:
        model = Cluster
        fields = ["name", "namesrv_addrs", "access_key", "secret_key", "read_only", "poll_interval", "enabled"]

    def clean_secret_key(self):
        value = self.cleaned_data.get("secret_key")
        return value or (self.instance.secret_key if self.instance.pk else "")


class HealthOverrideInline(admin.TabularInline):
    model = HealthOverride
    extra = 0


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterForm
    list_display = ["name", "namesrv_addrs", "poll_interval", "enabled", "read_only", "uses_acl"]
    inlines = [HealthOverrideInline]
