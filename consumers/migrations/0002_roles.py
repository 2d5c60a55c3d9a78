"""Create the role groups (viewer, operator, approver, admin) with their permissions."""

from django.db import migrations

# Frozen here: a migration must not change meaning when consumers/roles.py changes later.
ROLE_PERMISSIONS = {
    "viewer": ["view_console"],
    "operator": ["view_console", "request_change"],
    "approver": ["view_console", "approve_change"],
    "admin": [
        "view_console",
        "request_change",
        "approve_change",
        "add_cluster",
        "change_cluster",
        "delete_cluster",
        "view_cluster",
    ],
}


def create_roles(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after all migrations ran; we need them now. The
    # historical app config has no models module, which create_permissions insists on.
    app_config = apps.get_app_config("consumers")
    app_config.models_module = True
    try:
        create_permissions(app_config, apps=apps, verbosity=0)
    finally:
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = Permission.objects.filter(content_type__app_label="consumers", codename__in=codenames)
        if permissions.count() != len(codenames):
            raise RuntimeError(f"missing permissions for role {role}")
        group.permissions.set(permissions)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLE_PERMISSIONS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("consumers", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
