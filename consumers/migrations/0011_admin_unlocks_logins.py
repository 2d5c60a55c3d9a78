"""The admin role sees django-axes's login failures and lockouts in the Django admin, and unlocks
(deletes access attempts)."""

from django.db import migrations

# Frozen here, as in 0002 and 0005: the migration keeps its meaning when consumers/roles.py changes.
ADDED = [
    "view_accessattempt",
    "delete_accessattempt",
    "view_accessfailurelog",
    "view_accesslog",
]


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    # As in 0002: permissions are normally created after all migrations ran; we need them now.
    app_config = apps.get_app_config("axes")
    app_config.models_module = True
    try:
        create_permissions(app_config, apps=apps, verbosity=0)
    finally:
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permissions = Permission.objects.filter(content_type__app_label="axes", codename__in=ADDED)
    if permissions.count() != len(ADDED):
        raise RuntimeError("missing django-axes permissions for the admin role")
    admin, _ = Group.objects.get_or_create(name="admin")
    admin.permissions.add(*permissions)


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    admin = Group.objects.filter(name="admin").first()
    if admin:
        admin.permissions.remove(*Permission.objects.filter(content_type__app_label="axes", codename__in=ADDED))


class Migration(migrations.Migration):
    dependencies = [
        ("consumers", "0010_api_tokens"),
        ("axes", "0010_accessattemptexpiration"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
