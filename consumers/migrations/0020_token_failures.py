"""Refused API tokens counted per (prefix, address), apart from password logins; the admin role
sees them in the Django admin and unlocks (deletes a row)."""

from django.db import migrations, models

# Frozen here, as in 0011: the migration keeps its meaning when consumers/roles.py changes.
ADDED = ["view_tokenfailure", "delete_tokenfailure"]


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    # As in 0002: permissions are normally created after all migrations ran; we need them now.
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
        raise RuntimeError("missing token failure permissions for the admin role")
    admin, _ = Group.objects.get_or_create(name="admin")
    admin.permissions.add(*permissions)


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    admin = Group.objects.filter(name="admin").first()
    if admin:
        admin.permissions.remove(*Permission.objects.filter(content_type__app_label="consumers", codename__in=ADDED))


class Migration(migrations.Migration):
    dependencies = [
        ("consumers", "0019_redrive_partial_and_recovered"),
    ]

    operations = [
        migrations.CreateModel(
            name="TokenFailure",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("prefix", models.CharField(max_length=16)),
                ("address", models.CharField(max_length=64)),
                ("failures", models.PositiveIntegerField(default=0)),
                ("last_failure_at", models.DateTimeField()),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("prefix", "address"), name="token_failure_once")],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
