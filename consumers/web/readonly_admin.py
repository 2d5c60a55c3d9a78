"""The admin of records the console only appends (the audit log, alerts, deliveries, silences):
shown, never added, changed or deleted there."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
