"""The admin role manages alert rules and channels, and reads alerts, deliveries and silences
in the Django admin."""

from django.db import migrations

# Frozen here, as in 0002: the migration keeps its meaning when consumers/roles.py changes.
ADDED = [
    "add_alertrule",
    "change_alertrule",
    "delete_alertrule",
    "view_alertrule",
    "add_channel",
    "change_channel",
    "delete_channel",
    "view_channel",
    "view_alert",
    "view_delivery",
    "view_silence",
]


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    app_config = apps.get_app_config("consumers")
    app_config.models_module = True
    try:
        create_permissions(app_config, apps=apps, verbosity=0)
    finally:
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permissions = Permission.objects.filter(content_type__app_label="consumers", codename__in=ADDED)
    if permissions.count() != len(ADDED):
        raise RuntimeError("missing permissions for the admin role")
    admin, _ = Group.objects.get_or_create(name="admin")
    admin.permissions.add(*permissions)


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    admin = Group.objects.filter(name="admin").first()
    if admin:
        admin.permissions.remove(*Permission.objects.filter(content_type__app_label="consumers", codename__in=ADDED))


class Migration(migrations.Migration):
    dependencies = [("consumers", "0016_alerts")]

    operations = [migrations.RunPython(grant, revoke)]
