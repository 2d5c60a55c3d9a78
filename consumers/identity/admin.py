"""The admin pages of identity: grants (every change audited), the identity provider accounts
(read-only: sign-ins write them) and refused API tokens (deleting a row unlocks)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils.translation import gettext as _

from .. import audit
from ..web.readonly_admin import ReadOnlyAdmin
from .grants import PatternError, patterns
from .models import Grant, IdpAccount
from .tokens.models import TokenFailure


class GrantForm(forms.ModelForm):
    class Meta:
        model = Grant
        fields = ["subject_kind", "subject", "role", "clusters", "groups", "topics", "note"]

    def _patterns(self, name: str, *, required: bool) -> str:
        value = self.cleaned_data.get(name, "")
        try:
            found = patterns(value)
        except PatternError as exc:
            raise forms.ValidationError(str(exc)) from None
        if required and not found:
            raise forms.ValidationError(_("name at least one, or * for all"))
        return " ".join(found)

    def clean_clusters(self):
        return self._patterns("clusters", required=True)

    def clean_groups(self):
        return self._patterns("groups", required=True)

    def clean_topics(self):
        return self._patterns("topics", required=False)

    def clean_subject(self):
        subject = self.cleaned_data["subject"].strip()
        if self.cleaned_data.get("subject_kind") == Grant.Subject.IDP_GROUP:
            subject = subject.lstrip("/")  # Keycloak's /payments is recorded as payments
        if not subject:
            raise forms.ValidationError(_("name the group or user"))
        return subject


def _wire(grant: Grant) -> dict:
    return {
        "grant": grant.pk,
        "subject": f"{grant.subject_kind}:{grant.subject}",
        "role": grant.role,
        "clusters": grant.clusters,
        "groups": grant.groups,
        "topics": grant.topics,
    }


@admin.register(Grant)
class GrantAdmin(admin.ModelAdmin):
    """Who may see and do what, on which clusters and groups. Saved and deleted grants are
    written to the audit log, with what they were before."""

    form = GrantForm
    list_display = ["subject_kind", "subject", "role", "clusters", "groups", "topics", "note", "created_by"]
    list_filter = ["subject_kind", "role"]
    search_fields = ["subject", "clusters", "groups", "note"]

    def save_model(self, request, obj, form, change):
        before = _wire(Grant.objects.get(pk=obj.pk)) if change else None
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        details = {**_wire(obj), **({"before": before} if before else {})}
        audit.record("grant-change" if change else "grant-add", username=request.user.get_username(),
                     remote_addr=request.META.get("REMOTE_ADDR", ""), details=details)  # fmt: skip

    def delete_model(self, request, obj):
        details = _wire(obj)
        super().delete_model(request, obj)
        audit.record("grant-delete", username=request.user.get_username(),
                     remote_addr=request.META.get("REMOTE_ADDR", ""), details=details)  # fmt: skip

    def delete_queryset(self, request, queryset):
        for grant in queryset:
            self.delete_model(request, grant)


@admin.register(IdpAccount)
class IdpAccountAdmin(ReadOnlyAdmin):
    list_display = ["user", "issuer", "subject", "groups", "last_sign_in"]
    search_fields = ["user__username", "subject"]


@admin.register(TokenFailure)
class TokenFailureAdmin(admin.ModelAdmin):
    """Refused API tokens per (prefix, address): deleting a row unlocks that pair."""

    list_display = ["prefix", "address", "failures", "last_failure_at"]
    search_fields = ["prefix", "address"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
